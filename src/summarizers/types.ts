import type { z } from 'zod';
import type { SummaryPlanSchema } from '../contract/parts.js';
import { CompactorError } from '../errors.js';
import type { FactReport } from './facts.js';
import type { Trail } from './trail.js';
import type { UserWords } from './user-words.js';

/** One message of the range to summarize, as the summarizers read it (format-free). */
export interface TranscriptEntry {
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** The message's own prose (text parts, refusals), without tool traffic or thinking. */
  text: string;
  /** Tool calls the message made. */
  calls: { name: string; args: string; id?: string; input?: Record<string, unknown> | undefined }[];
  /** For a tool result: the tool's name, whether it reported an error, and the call it answers. */
  tool?: { name: string; error: boolean; callId?: string };
  /** Media the message carried, as short notes (`[image]`, `[file]`). */
  media: string[];
}

/** What a summarizer is asked for. */
export interface SummaryRequest {
  entries: TranscriptEntry[];
  /** An earlier summary of ours that this one extends (the fold), or null. */
  previous: string | null;
  /** Exact identifiers found in the range (paths, URLs, ids, error codes, numbers with units). */
  facts: string[];
  /**
   * The artifact trail of the range (after the earlier summary's, folded) and its budget in tokens
   * (0: no trail); written after the prose whatever the summarizer writes.
   */
  trail?: { trail: Trail; tokens: number } | undefined;
  /**
   * The user's own words: the earlier summary's list, then the messages the user typed in the
   * range (`user-words.ts`); written last, after the trail, whatever the summarizer writes.
   */
  words?: UserWords | undefined;
  /** How many identifiers `facts` were chosen from (the guard reports the rest as left out). */
  factsFound?: number | undefined;
  /** Budget for the summary, in tokens. */
  maxTokens: number;
  /** Summarizer model (LLM only); the configured default when omitted. */
  model?: string | undefined;
  /** Extra instructions appended to the versioned prompt (LLM only). */
  instructions?: string | undefined;
  temperature?: number | undefined;
  /** Budget for one call's input, in tokens: longer ranges are summarized in chunks, then merged. */
  maxInputTokens?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** What one summary cost, summed over every call that made it. */
export interface SummaryUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  calls: number;
}

export interface SummaryResult {
  text: string;
  usage: SummaryUsage;
  model: string | null;
}

/** A summary as a strategy keeps it: the fact-guarded text, its fact report, its model and cost. */
export interface SettledSummary {
  text: string;
  facts: FactReport;
  model: string | null;
  usage: SummaryUsage;
}

/** The calls a summary would make (dry runs), with their input sizes. */
export type SummaryPlan = z.output<typeof SummaryPlanSchema>;

/**
 * The Summarizer contract: `llm` (an OpenAI-compatible server) or `extractive` (no LLM, a
 * deterministic digest). Failures reject with a `CompactorError` with a summarizer code (timeout,
 * unavailable, upstream, empty), translated at the implementation's boundary; an empty summary is
 * a failure.
 */
export interface Summarizer {
  readonly kind: 'llm' | 'extractive';
  summarize(request: SummaryRequest): Promise<SummaryResult>;
  plan(request: SummaryRequest): SummaryPlan;
  /**
   * The model a request gets: its own if allowed, else the default (null when no model is involved,
   * as with the extractive summarizer). Throws 400 `CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED` for a
   * model that is not allowed, with `errors[0].path` `summarizer.model`.
   */
  model?(requested: string | undefined): string | null;
}

export const NO_SUMMARY_USAGE: SummaryUsage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0 };

export function addUsage(a: SummaryUsage, b: SummaryUsage): SummaryUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    calls: a.calls + b.calls,
  };
}

/**
 * A summary that failed, and what it was billed before it did (a failed summary is still paid
 * for: every answer received, retries and chunks included). Its code, detail and `retry-after`
 * are the cause's.
 */
export class SummarizerFailure extends CompactorError {
  constructor(
    cause: CompactorError,
    readonly billed: SummaryUsage,
  ) {
    super(
      cause.code,
      cause.message,
      cause.errors,
      cause.retryAfterSeconds !== undefined ? { retryAfterSeconds: cause.retryAfterSeconds } : {},
    );
    this.name = 'SummarizerFailure';
  }
}

/** What a failure was billed: a `SummarizerFailure`'s bill, nothing for any other error. */
export function billedBy(error: unknown): SummaryUsage {
  return error instanceof SummarizerFailure ? error.billed : NO_SUMMARY_USAGE;
}
