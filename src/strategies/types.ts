import type { z } from 'zod';
import type { Addresser } from '../history/address.js';
import type { PreparedHistory } from '../history/prepared.js';
import type { Action, Warning } from '../history/types.js';
import type { NewArtifact } from '../store/types.js';
import type { SingleFlight } from '../summarizers/single-flight.js';
import type { SettledSummary, Summarizer } from '../summarizers/types.js';
import type { TokenCounter } from '../tokens/counter.js';
import type { ModelProfile } from '../tokens/models.js';

export type { PreparedHistory } from '../history/prepared.js';

/** What a strategy may use besides the history: injected, never imported. */
export interface StrategyContext {
  readonly counter: TokenCounter;
  /**
   * Names offloaded originals and summary-cache entries for the caller (keyed by the installation
   * secret and the caller's scope): ids are never derivable from content alone.
   */
  readonly address: Addresser;
  readonly profile: ModelProfile;
  readonly signal?: AbortSignal;
  /** The configured summarizer (the extractive one when no LLM is configured). */
  readonly summarizer?: Summarizer;
  /** Reads stored artifacts (the summary cache); resolves empty when the store cannot answer. */
  readonly recall?: (ids: readonly string[]) => Promise<Map<string, string>>;
  /** Summaries in flight in this process, shared by identical requests (see `settleSummary`). */
  readonly flights?: SingleFlight<SettledSummary>;
  /** A dry run: compute and report, change nothing, call no LLM. */
  readonly dryRun?: boolean;
  /** Reads a history a previous stage produced (pipelines): parsed, grouped, counted, with this occupancy. */
  readonly prepare?: (messages: unknown[], occupancy: number) => PreparedHistory;
}

/** What `Strategy.check` judges options against. */
export interface CheckEnv {
  readonly profile: ModelProfile;
  /** The configured summarizer (the extractive one when no LLM is configured). */
  readonly summarizer: Summarizer;
}

/** What a strategy's LLM calls cost (summed). */
export interface BilledUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  calls: number;
  model: string | null;
}

export const NO_BILLED: BilledUsage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0, model: null };

/** Usage as responses report it: with `total_tokens`, and all zero when nothing was billed. */
export function withTotal(u: BilledUsage | undefined): BilledUsage & { total_tokens: number } {
  const usage = u ?? NO_BILLED;
  return { ...usage, total_tokens: usage.input_tokens + usage.output_tokens };
}

/** A strategy's answer. `messages` holds original values for kept messages, by reference. */
export interface StrategyOutput<Extra> {
  messages: unknown[];
  actions: Action[];
  warnings: Warning[];
  /** Set when nothing changed: a code such as `nothing_to_reduce`. */
  reason?: string;
  /** Tokens of messages the strategy inserted (summaries); subtracted from what was freed. */
  addedTokens: number;
  /** Originals to persist when the request's store is `server` (never on a dry run). */
  offload?: NewArtifact[];
  /** Entries to store if the store answers (the summary cache); a failure is only logged. */
  bestEffort?: NewArtifact[];
  /** What the strategy's LLM calls were billed, failed ones included. */
  usage?: BilledUsage;
  /** A cheaper strategy stood in for a failed one. */
  fallback?: { from: string; to: string; reason: string };
  /** The error code of a failure the strategy recovered from (`on_failure: keep`). */
  failure?: string;
  /** Strategy-specific response fields (e.g. `dropped`). */
  extra: Extra;
}

/**
 * One strategy, one file, one registry line (ARCHITECTURE.md). `options` is a strict zod object
 * (an unknown option is an error, never dropped: parsed alone, nested in fit, or as request
 * fields) whose fields join the common request fields in the endpoint's schema; `idle` gives the extra fields
 * for a response where the strategy did not run (below the trigger).
 */
export interface Strategy<Options extends z.ZodObject, Extra> {
  readonly kind: string;
  readonly options: Options;
  idle(history: PreparedHistory): Extra;
  /**
   * Throws when the options cannot apply: to this model, or with this summarizer (a summarizer
   * model that is not allowed). Checked before the trigger, so bad options are a 400 whatever the
   * history's size.
   */
  check?(options: z.output<Options>, env: CheckEnv): void;
  run(
    history: PreparedHistory,
    options: z.output<Options>,
    ctx: StrategyContext,
  ): StrategyOutput<Extra> | Promise<StrategyOutput<Extra>>;
}

/** Actions that keep every message. */
export function keepAll(length: number): Action[] {
  return Array.from({ length }, (_, index) => ({ index, action: 'keep', tokens_freed: 0 }));
}
