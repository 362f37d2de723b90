import type { z } from 'zod';
import type { ReasonCode } from '../contract/codes.js';
import type { BilledUsage as BilledUsageSchema } from '../contract/parts.js';
import type { CostEnv } from '../cost/model.js';
import type { ErrorCode } from '../errors.js';
import type { Addresser } from '../history/address.js';
import type { Markers } from '../history/markers.js';
import type { Applied, Count } from '../history/plan/apply.js';
import type { Plan } from '../history/plan/types.js';
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
  /**
   * Signs the markers a strategy writes and verifies those it reads (same keying as `address`): a
   * marker that does not verify is the user's text.
   */
  readonly markers: Markers;
  readonly profile: ModelProfile;
  readonly signal?: AbortSignal;
  /** The configured summarizer (the extractive one when no LLM is configured). */
  readonly summarizer?: Summarizer;
  /** Reads stored artifacts (the summary cache); resolves empty when the store cannot answer. */
  readonly recall?: (ids: readonly string[]) => Promise<Map<string, string>>;
  /**
   * Originals this request offloaded but has not stored yet, by artifact id (fit's compaction
   * stage, before its summary): the artifact trail reads them as it reads stored ones.
   */
  readonly pending?: ReadonlyMap<string, unknown>;
  /** Summaries in flight in this process, shared by identical requests (see `settleSummary`). */
  readonly flights?: SingleFlight<SettledSummary>;
  /** A dry run: compute and report, change nothing, call no LLM. */
  readonly dryRun?: boolean;
  /** What a reduction is priced with (the price table, the previous call's usage, the fixed prefix). */
  readonly cost: CostEnv;
  /** Prepared summaries, where the service makes them (absent: fit neither prepares nor splices). */
  readonly prepared?: PreparedContext;
}

/**
 * A range a rolling summary would cover in a history, identified as the summary cache identifies
 * it: `id` is the cache key (the prompt, the summarizer, the options that shape the summary, the
 * earlier summary and the range's bytes, under the caller's key), so a summary prepared for it is
 * found by a later request exactly when that request would ask for the same summary. `prefix`
 * names what precedes the range (head, first user message, earlier summary): the conversation a
 * later request's history must continue.
 */
export interface PreparedRange {
  readonly id: string;
  readonly prefix: string;
  /** The range: messages `from` (inclusive) to `to` (exclusive) of the history it was found in. */
  readonly from: number;
  readonly to: number;
}

/** A prepared range as a later request sees it: ready when its summary is in the summary cache. */
export interface PreparedEntry extends PreparedRange {
  readonly state: 'started' | 'running' | 'ready' | 'failed' | 'spliced';
  /**
   * The shortest history (in messages) a fit spliced it into, where known (the embedded preparer
   * records it): a longer history that still holds the range is its client's whole history, sent
   * again without the answer adopted.
   */
  readonly splicedAt?: number;
}

/**
 * Whether a run prepares and splices summaries: never in a dry run; else as the request says
 * (`prepare.enabled`), else as the service does by default (`byDefault`). The one rule: fit's
 * own resolution, the service deciding whether a request's prepared summaries are worth reading
 * (before the default is known: pass true), and its `prepared_unavailable` warning all ask it.
 */
export function prepares(asked: boolean | undefined, dryRun: boolean | undefined, byDefault: boolean): boolean {
  return dryRun !== true && (asked ?? byDefault);
}

/** What fit knows of prepared summaries: the caller's, and whether it prepares by default. */
export interface PreparedContext {
  /** The caller's prepared ranges, with their states and (not yet billed) usage. */
  readonly entries: readonly (PreparedEntry & { usage?: BilledUsage })[];
  /** Whether fit prepares when the request does not say (COMPACTOR_PREPARE; on with an LLM summarizer). */
  readonly byDefault: boolean;
  /**
   * Why the caller's prepared summaries could not be read (their Redis did not answer in time):
   * the request goes on without them (neither preparing nor splicing) and says so in its warnings.
   */
  readonly unavailable?: string;
  /**
   * Resolves once the caller's prepared range `id` settles: true when its summary is in the
   * summary cache, false when it failed, is unknown, or `ms` passed or `signal` aborted first.
   * Signalled by the preparer when the job ends (no polling). Absent: nothing to wait on.
   */
  readonly settled?: (id: string, ms: number, signal?: AbortSignal) => Promise<boolean>;
}

/** A summary fit asks the service to prepare off the request path: its range and the `/v1/summarize` body that makes it. */
export interface PrepareRequest extends PreparedRange {
  readonly body: Record<string, unknown>;
}

/** What `Strategy.check` judges options against. */
export interface CheckEnv {
  readonly profile: ModelProfile;
  /** The configured summarizer (the extractive one when no LLM is configured). */
  readonly summarizer: Summarizer;
}

/** What a strategy's LLM calls cost (summed). */
export type BilledUsage = Omit<z.output<typeof BilledUsageSchema>, 'total_tokens'>;

export const NO_BILLED: BilledUsage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0, model: null };

/** Usage as responses report it: with `total_tokens`, and all zero when nothing was billed. */
export function withTotal(u: BilledUsage | undefined): BilledUsage & { total_tokens: number } {
  const usage = u ?? NO_BILLED;
  return { ...usage, total_tokens: usage.input_tokens + usage.output_tokens };
}

/**
 * Counts a message of `h`'s format under the request's profile, through the count cache. One
 * function per counter, profile and format (every view of a request shares it): a plan applied
 * again with it is rendered once (`applyPlan`).
 */
export function countWith(h: PreparedHistory, ctx: Pick<StrategyContext, 'counter' | 'profile'>): Count {
  const { counter, profile } = ctx;
  let byProfile = counters.get(counter);
  if (!byProfile) {
    byProfile = new WeakMap();
    counters.set(counter, byProfile);
  }
  let byFormat = byProfile.get(profile);
  if (!byFormat) {
    byFormat = new Map();
    byProfile.set(profile, byFormat);
  }
  let count = byFormat.get(h.format.name);
  if (!count) {
    const format = h.format;
    count = (message) => counter.countMessage(format, profile, message);
    byFormat.set(format.name, count);
  }
  return count;
}

const counters = new WeakMap<TokenCounter, WeakMap<ModelProfile, Map<string, Count>>>();

/**
 * A strategy's answer: a plan over the input's indices (never wire JSON: `applyPlan` renders it),
 * or, when nothing changes, the `reason`; what its LLM calls cost; and its own response fields,
 * made from what the plan rendered to (`applied`, undefined when there is no plan).
 */
export interface StrategyResult<Extra> {
  plan?: Plan;
  warnings: Warning[];
  /** Set when nothing changes: a code such as `nothing_to_reduce`. */
  reason?: ReasonCode;
  /** Entries to store if the store answers (the summary cache); a failure is only logged. */
  bestEffort?: NewArtifact[];
  /** What the strategy's LLM calls were billed, failed ones included. */
  usage?: BilledUsage;
  /** A cheaper strategy stood in for a failed one: `reason` is the failure's error code. */
  fallback?: { from: string; to: string; reason: ErrorCode };
  /**
   * The error code of a summarizer failure the strategy recovered from (`on_failure` keep or
   * window; fit's summarize stage): the metrics count it. Not a response field.
   */
  failure?: ErrorCode;
  /** `billed`: the usage the response bills (a prepared summary billed to another response taken out). */
  extra(applied: Applied | undefined, billed?: BilledUsage): Extra;
}

/**
 * One strategy, one file, one registry line (docs/architecture.md, rule 4). `options` is a strict zod object
 * (an unknown option is an error, never dropped: parsed alone, nested in fit, or as request
 * fields) whose fields join the common request fields in the endpoint's schema, as `response`'s
 * join the common response fields; `idle` gives the extra fields for a response where the strategy
 * did not run (below the trigger). Its endpoint's schemas are made from these; its route (`routes/strategies.ts`) describes it.
 * `Result` is what `run` answers: the generic result, or one that carries more for the service
 * (fit's `FitResult`), which `Compactor.run` hands on as it is.
 */
export interface Strategy<
  Options extends z.ZodObject,
  Extra,
  Response extends z.ZodRawShape = z.ZodRawShape,
  Result extends StrategyResult<Extra> = StrategyResult<Extra>,
> {
  readonly kind: string;
  readonly options: Options;
  /** The strategy's own response fields (joined to the common ones in its endpoint's response schema). */
  readonly response: Response;
  idle(history: PreparedHistory, options: z.output<Options>, cost: CostEnv): Extra;
  /**
   * Throws when the options cannot apply: to this model, or with this summarizer (a summarizer
   * model that is not allowed). Checked before the trigger, so bad options are a 400 whatever the
   * history's size.
   */
  check?(options: z.output<Options>, env: CheckEnv): void;
  run(history: PreparedHistory, options: z.output<Options>, ctx: StrategyContext): Result | Promise<Result>;
}

/** Actions that keep every message. */
export function keepAll(length: number): Action[] {
  return Array.from({ length }, (_, index) => ({ index, action: 'keep', tokens_freed: 0 }));
}
