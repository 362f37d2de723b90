import { CompactorError, fieldError } from '../../errors.js';
import type { Address, Addresser } from '../../history/address.js';
import type { OriginalSpec, StorePolicy } from '../../history/plan/types.js';
import type { Item } from '../../history/types.js';
import { rangePayload } from '../../history/vocabulary.js';
import type { NewArtifact } from '../../store/types.js';
import { extractFacts, guardFacts } from '../../summarizers/facts.js';
import { PROMPT_VERSION } from '../../summarizers/prompts.js';
import {
  NO_SUMMARY_USAGE,
  type SettledSummary,
  type Summarizer,
  type SummaryRequest,
  type SummaryUsage,
  type TranscriptEntry,
} from '../../summarizers/types.js';
import type { BilledUsage, PreparedHistory, StrategyContext } from '../types.js';

/** Where a history's tool calls are: for each id, the indexes of the messages making it, and its names. */
type CallIndex = Map<string, { at: number[]; names: string[] }>;
const callIndexes = new WeakMap<PreparedHistory, CallIndex>();

/**
 * The history's tool calls by id, read once per prepared history: every range of a sections run
 * looks up the calls its results answer here, instead of reading every earlier call's arguments
 * again (which made sections mode quadratic in the history's length).
 */
function callIndex(h: PreparedHistory): CallIndex {
  const known = callIndexes.get(h);
  if (known) return known;
  const index: CallIndex = new Map();
  h.items.forEach((item, i) => {
    if (item.calls.length === 0) return;
    for (const c of h.format.callSites(h.messages[i])) {
      const entry = index.get(c.id) ?? { at: [], names: [] };
      entry.at.push(i);
      entry.names.push(c.name);
      index.set(c.id, entry);
    }
  });
  callIndexes.set(h, index);
  return index;
}

/** The name of the tool whose call `callId`, made at or before message `at`, a result answers ('tool' if none). */
function toolName(h: PreparedHistory, callId: string, at: number): string {
  const entry = callIndex(h).get(callId);
  if (!entry) return 'tool';
  // The latest call with that id at or before the result (ids are unique in a valid history).
  let lo = 0;
  let hi = entry.at.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((entry.at[mid] as number) <= at) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 ? 'tool' : (entry.names[found] as string);
}

/**
 * The messages of a range as transcript entries for the summarizers: each message's prose, its
 * tool calls with their arguments, each tool result as its own entry with the tool's name and
 * status, media as short notes. Format-free: every detail comes from the adapter.
 */
export function rangeEntries(h: PreparedHistory, indexes: readonly number[]): TranscriptEntry[] {
  const { format, messages, items } = h;
  const out: TranscriptEntry[] = [];
  for (const i of indexes) {
    const item = items[i] as Item;
    const message = messages[i];
    const calls = format.callSites(message);
    for (const r of format.resultSites(message)) {
      out.push({
        role: 'tool',
        text: r.text,
        calls: [],
        tool: { name: toolName(h, r.callId, i), error: r.error === true },
        media: [],
      });
    }
    const text = format.prose(message);
    const countable = format.countable(message);
    const media = [
      ...Array<string>(countable.images).fill('[image]'),
      ...Array<string>(countable.documents).fill('[file]'),
      ...Array<string>(countable.audio).fill('[audio]'),
    ];
    if (item.role === 'tool' && text === '' && calls.length === 0) continue;
    if (text === '' && calls.length === 0 && media.length === 0 && item.results.length > 0) continue;
    out.push({
      role: item.role === 'tool' ? 'tool' : item.role,
      text,
      calls: calls.map((c) => ({ name: c.name, args: c.args ? JSON.stringify(c.args) : '' })),
      media,
    });
  }
  return out;
}

/** The options of a summary request, as the summarize strategy takes them. */
export interface SummaryOptions {
  summarizer: { model?: string | undefined; prompt?: string | undefined; max_tokens: number; temperature?: number | undefined };
  max_input_tokens: number;
  timeout_ms?: number | undefined;
}

/** A summarized range as an artifact: what `expand` needs to put it back. */
export interface RangeArtifact {
  /** The range's JSON (`{messages, previous_id}`): what is stored, hashed and shared in flight. */
  json: string;
  sha256: string;
  /** The id the summary names (null with `store: none`). */
  id: string | null;
  /** What the plan offloads (none with `store: none`). */
  specs: OriginalSpec[];
}

/** The originals of `indexes` (after an earlier summary `previousId`) as one artifact, following `store`. */
export function rangeArtifact(
  kind: 'summary_range' | 'section_range',
  h: PreparedHistory,
  indexes: readonly number[],
  previousId: string | null,
  store: StorePolicy,
  address: Addresser,
): RangeArtifact {
  const value = rangePayload(
    indexes.map((i) => h.messages[i]),
    previousId,
  );
  const json = JSON.stringify(value);
  const { id, sha256 } = address(json);
  const spec: OriginalSpec = {
    id,
    sha256,
    json,
    value,
    kind,
    tool_name: null,
    tokens: indexes.reduce((n, i) => n + (h.counts[i] as number), 0),
    message_index: indexes[0] as number,
    store,
  };
  return { json, sha256, id: store === 'none' ? null : id, specs: store === 'none' ? [] : [spec] };
}

/**
 * What a summarizer is asked for a range: its transcript entries, the earlier summary it extends,
 * the exact facts found in both, the options, and the signal that ends the call (`deadlineOf`).
 */
export function summaryRequest(
  h: PreparedHistory,
  indexes: readonly number[],
  previous: string | null,
  o: SummaryOptions,
  signal: AbortSignal | undefined,
): SummaryRequest {
  const entries = rangeEntries(h, indexes);
  const facts = extractFacts([previous ?? '', ...entries.flatMap((e) => [e.text, ...e.calls.map((c) => c.args)])]);
  return {
    entries,
    previous,
    facts,
    maxTokens: o.summarizer.max_tokens,
    model: o.summarizer.model,
    instructions: o.summarizer.prompt,
    temperature: o.summarizer.temperature,
    maxInputTokens: o.max_input_tokens,
    signal,
  };
}

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
 * The model a summary would come from, checked against what the summarizer allows (null for the
 * extractive one). A model that is not allowed is a 400 `CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED`
 * naming `path` (where the request put it: `summarizer.model`, or `summarize.summarizer.model` in fit).
 */
export function allowedModel(summarizer: Summarizer, requested: string | undefined, path = 'summarizer.model'): string | null {
  try {
    return summarizer.model?.(requested) ?? null;
  } catch (error) {
    if (!(error instanceof CompactorError) || error.code !== 'CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED') throw error;
    throw fieldError(error.code, path, error.errors?.[0]?.message ?? error.message);
  }
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
  address: Addresser,
): Address {
  // The model the summary would come from, checked against the allowed list (a 400 when not).
  const shape = [PROMPT_VERSION, summarizer.kind, { ...o.summarizer, model: allowedModel(summarizer, o.summarizer.model) }];
  return address(`${purpose}\n${JSON.stringify([...shape, o.max_input_tokens])}\n${covered}`);
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
  request: (signal: AbortSignal | undefined) => SummaryRequest,
  deadline: AbortSignal | undefined = deadlineOf(timeoutMs, ctx.signal),
): Promise<SettledSummary & { shared: boolean }> {
  const start = async (): Promise<SettledSummary> => {
    const asked = request(deadline);
    const result = await summarizer.summarize(asked);
    const text = result.text.trim();
    if (text === '')
      throw Object.assign(new CompactorError('CMP_ERR_SUMMARIZER_EMPTY', 'the summarizer returned an empty summary'), {
        billed: result.usage,
      });
    const guarded = guardFacts(text, asked.facts);
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
  request: (signal: AbortSignal | undefined) => SummaryRequest,
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
    entry: { id: key.id, kind: 'summary_cache', tool_name: null, sha256: key.sha256, content },
  };
}
