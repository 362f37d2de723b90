import { CompactorError } from '../../errors.js';
import type { Address } from '../../history/address.js';
import { SUMMARY_CACHE_KIND } from '../../history/artifact-kinds.js';
import type { NewArtifact } from '../../store/types.js';
import { guardFacts } from '../../summarizers/facts.js';
import { PROMPT_VERSION } from '../../summarizers/prompts.js';
import {
  NO_SUMMARY_USAGE,
  type SettledSummary,
  type Summarizer,
  SummarizerFailure,
  type SummaryRequest,
  type SummaryUsage,
} from '../../summarizers/types.js';
import { USER_WORDS_HEADING } from '../../summarizers/user-words.js';
import type { BilledUsage, StrategyContext } from '../types.js';
import type { SummaryOptions } from './options.js';
import { allowedModel } from './range.js';

/** What a summarizer is asked, built when it is asked (never on a cache hit); it may read stored originals first. */
export type SummaryRequestOf = (signal: AbortSignal | undefined) => SummaryRequest | Promise<SummaryRequest>;

/** A request's summarizing deadline: its own `timeout_ms` from now, or the service's, whichever comes first. */
export function deadlineOf(timeoutMs: number | undefined, signal: AbortSignal | undefined): AbortSignal | undefined {
  const signals = [...(timeoutMs ? [AbortSignal.timeout(timeoutMs)] : []), ...(signal ? [signal] : [])];
  return signals.length > 1 ? AbortSignal.any(signals) : signals[0];
}

/** Rejects when `signal` aborts (a deadline reached); `cancel` removes the listener. */
function whenAborted(signal: AbortSignal | undefined): { promise: Promise<never>; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<never>((_, reject) => {
    if (!signal) return;
    const onAbort = () =>
      reject(
        new CompactorError('CMP_ERR_SUMMARIZER_TIMEOUT', 'the summary shared with an identical request was not ready in time'),
      );
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    cancel = () => signal.removeEventListener('abort', onAbort);
  });
  return { promise, cancel };
}

/**
 * What makes two summaries the same: the prompt, the summarizer and the options that shape it, and
 * what it covers. Its address keys the calls in flight and the summary cache.
 */
export function summaryKey(
  purpose: string,
  summarizer: Summarizer,
  o: SummaryOptions,
  covered: string,
  address: (json: string) => Address,
): Address {
  // The model the summary would come from, checked against the allowed list (a 400 when not).
  const shape = [
    PROMPT_VERSION,
    USER_WORDS_HEADING,
    summarizer.kind,
    { ...o.summarizer, model: allowedModel(summarizer, o.summarizer.model) },
  ];
  return address(`${purpose}\n${JSON.stringify([...shape, o.max_input_tokens, o.trail_tokens])}\n${covered}`);
}

/**
 * One summary: asked of the summarizer, trimmed (an empty one is a failure), its facts guarded. An
 * identical summary already in flight in this process (same `key`) is shared instead of asked
 * again, so a burst of identical requests (an agent's retries, a fleet starting at once) makes one
 * call. A request that shared one reports `shared` and was billed nothing, for a failure too.
 * Each request keeps its own deadline (`timeout_ms` from when it asks, and the service's): a
 * request that shares a flight stops waiting at its own deadline, and when the flight runs out of
 * its first request's time while the sharer still has some, the sharer asks on its own.
 */
export async function settleSummary(
  ctx: StrategyContext,
  summarizer: Summarizer,
  key: string,
  timeoutMs: number | undefined,
  request: SummaryRequestOf,
  deadline: AbortSignal | undefined = deadlineOf(timeoutMs, ctx.signal),
): Promise<SettledSummary & { shared: boolean }> {
  const start = async (): Promise<SettledSummary> => {
    const asked = await request(deadline);
    const result = await summarizer.summarize(asked);
    const text = result.text.trim();
    if (text === '')
      throw new SummarizerFailure(
        new CompactorError('CMP_ERR_SUMMARIZER_EMPTY', 'the summarizer returned an empty summary'),
        result.usage,
      );
    const guarded = guardFacts(text, asked.facts, asked.factsFound, asked.trail, asked.words);
    return { text: guarded.text, facts: guarded.facts, model: result.model, usage: result.usage };
  };
  const flight = ctx.flights?.run(key, start) ?? { result: start(), joined: false };
  if (!flight.joined) return { ...(await flight.result), shared: false };
  const own = whenAborted(deadline);
  try {
    return { ...(await Promise.race([flight.result, own.promise])), usage: NO_SUMMARY_USAGE, shared: true };
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    // The flight ran out of its first request's time, not of this one's: ask on our own.
    if (error.code === 'CMP_ERR_SUMMARIZER_TIMEOUT' && !deadline?.aborted)
      return settleSummary(ctx, summarizer, key, timeoutMs, request, deadline);
    throw new CompactorError(error.code, error.message, error.errors);
  } finally {
    own.cancel();
  }
}

/** What a request is billed: its usage, naming a model only when a call was made. */
export function billed(usage: SummaryUsage, model: string | null): BilledUsage {
  return { ...usage, model: usage.calls > 0 ? model : null };
}

/** A summary and how it came: `cached` (from the store, or shared in flight: nothing billed). */
export interface CachedSummary extends SettledSummary {
  cached: boolean;
  /** The summary-cache entry to write (best effort) when this request asked for the summary. */
  entry?: NewArtifact;
}

/**
 * One summary from the summary cache (the store) when it holds `key`, else settled
 * (`settleSummary`), with the cache entry to write for it: the same summary asked again costs
 * nothing. Rolling and sections mode both go through here.
 */
export async function cachedSummary(
  ctx: StrategyContext,
  summarizer: Summarizer,
  key: Address,
  timeoutMs: number | undefined,
  request: SummaryRequestOf,
): Promise<CachedSummary> {
  const hit = (await ctx.recall?.([key.id]))?.get(key.id);
  if (hit) return { ...(JSON.parse(hit) as Omit<SettledSummary, 'usage'>), usage: NO_SUMMARY_USAGE, cached: true };
  const settled = await settleSummary(ctx, summarizer, key.id, timeoutMs, request);
  const { text, facts, model, usage, shared } = settled;
  if (shared) return { text, facts, model, usage, cached: true };
  const content = JSON.stringify({ text, facts, model });
  return {
    text,
    facts,
    model,
    usage,
    cached: false,
    entry: { id: key.id, kind: SUMMARY_CACHE_KIND, tool_name: null, sha256: key.sha256, content },
  };
}

/**
 * A summarize run that failed after paying for some summaries (sections mode asks for several at
 * once): what every call it made was billed, and the summary-cache entries of those that answered,
 * cached all the same so that a retry does not pay for them again.
 */
export class PaidFailure extends SummarizerFailure {
  constructor(
    cause: CompactorError,
    billed: SummaryUsage,
    readonly paid: readonly NewArtifact[],
  ) {
    super(cause, billed);
  }
}
