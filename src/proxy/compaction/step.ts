import { type AnswerContext, type CompactionAnswer, compactionAnswer } from './answer.js';
import { type HeaderBag, type RecognizedCompaction, recognizeCompaction } from './recognize.js';
import type { PreparedCompaction } from './summary-text.js';

/**
 * Instant compaction as the proxy's front door calls it: one step before reduction. A request that
 * is not an agent's own compaction request comes back `not-compaction` (the door goes on as
 * before). A recognised one is either `answered` (the door sends `answer` with status 200 and
 * forwards nothing) or `passed` (the door forwards it byte-identical: never reduced, an agent
 * summarising its own history sees it as it sent it). Decides from the options, the per-request
 * opt-out and the prepared summary `find` returns; no I/O of its own.
 */

/** `COMPACTOR_PROXY_OPTIONS` `instant_compaction`: on (an LLM-written summary only), off, or also extractive summaries. */
export type InstantSetting = boolean | 'extractive';

/** The per-request opt-out header (`off`). */
export const OPT_OUT_HEADER = 'x-compactor-instant-compaction';

/** Why a recognised compaction request was passed through. */
export type PassReason =
  /** `x-compactor-instant-compaction: off`. */
  | 'opted-out'
  /** `instant_compaction: false`. */
  | 'off'
  /** A form Compactor does not answer (Codex's older `/responses/compact`). */
  | 'unsupported-form'
  /** No prepared summary of this conversation was ready. */
  | 'none-ready'
  /** The prepared summary could not be read (its store did not answer). */
  | 'unavailable'
  /** Only an extractive summary was ready, and `instant_compaction` is not `"extractive"`. */
  | 'extractive';

/** A prepared summary found for the conversation, and which summarizer wrote it. */
export interface FoundSummary {
  prepared: PreparedCompaction;
  writtenBy: 'llm' | 'extractive';
}

/** What the step is given. */
export interface InstantInput {
  provider: string;
  path: string;
  headers: HeaderBag;
  body: unknown;
  /** Default true. */
  setting?: InstantSetting | undefined;
  /** The conversation's prepared summary covering all but its newest calls, or undefined when none is ready. */
  find: (recognized: RecognizedCompaction) => Promise<FoundSummary | undefined>;
  context: AnswerContext;
}

/** The step's decision. */
export type InstantStep =
  | { kind: 'not-compaction' }
  | { kind: 'passed'; recognized: RecognizedCompaction; reason: PassReason; header: string }
  | { kind: 'answered'; recognized: RecognizedCompaction; answer: CompactionAnswer; found: FoundSummary; header: string };

/** The `x-compactor` value of a passed request. */
export function passedHeader(reason: PassReason): string {
  return `compaction-passed; reason=${reason}`;
}

/** The `x-compactor` value of an answered request. */
export const ANSWERED_HEADER = 'compaction-answered';

/** The `outcome` label of `compactor_proxy_compactions_total{provider,outcome}`. */
export function outcomeLabel(step: InstantStep): string | undefined {
  if (step.kind === 'not-compaction') return undefined;
  return step.kind === 'answered' ? 'answered' : `passed_${step.reason.replaceAll('-', '_')}`;
}

function optedOut(headers: HeaderBag): boolean {
  const value = headers[OPT_OUT_HEADER];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim().toLowerCase() === 'off';
}

/**
 * Recognises the request, then answers it from the prepared summary or says why it passes.
 * `find` rejecting counts as `unavailable`; never rejects.
 */
export async function instantCompaction(input: InstantInput): Promise<InstantStep> {
  const recognized = recognizeCompaction(input.provider, input.path, input.headers, input.body);
  if (!recognized) return { kind: 'not-compaction' };
  const pass = (reason: PassReason): InstantStep => ({ kind: 'passed', recognized, reason, header: passedHeader(reason) });
  const setting = input.setting ?? true;
  if (optedOut(input.headers)) return pass('opted-out');
  if (setting === false) return pass('off');
  if (recognized.form === 'compact-endpoint') return pass('unsupported-form');
  let found: FoundSummary | undefined;
  try {
    found = await input.find(recognized);
  } catch {
    return pass('unavailable');
  }
  if (!found) return pass('none-ready');
  if (found.writtenBy === 'extractive' && setting !== 'extractive') return pass('extractive');
  const answer = compactionAnswer(recognized, found.prepared, input.context);
  if (!answer) return pass('unsupported-form');
  return { kind: 'answered', recognized, answer, found, header: ANSWERED_HEADER };
}
