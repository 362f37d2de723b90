import type { Prices } from '../cost/prices.js';
import type {
  CallOutcome,
  ConversationCallView,
  ConversationDetailView,
  ConversationSummaryView,
  ConversationTotals,
} from '../schemas/conversations.js';

/**
 * The conversation record's pure part: what one call's record holds (counts, ids and bills, never
 * content), how a usage report is priced, and how a conversation's calls add up. No I/O here;
 * `conversations.ts` stores and reads the records.
 */

/** What a caller records for one model call (the proxy once per proxied call; fit when a request names a conversation). */
export interface CallInput {
  readonly via: 'proxy' | 'fit';
  /** anthropic, openai, gemini; for fit, the format the history was read as. */
  readonly provider: string;
  /** The format whose default prices apply when the model is not in the price table. */
  readonly format: string;
  readonly model: string | null;
  readonly outcome: CallOutcome;
  /** A bypass reason, or why nothing was reduced; null when reduced. */
  readonly reason: string | null;
  readonly tokens: {
    readonly client: number;
    readonly forwarded: number;
    readonly window: number | null;
    /** Tokens the call wrote to the cache only because its prefix changed (0 when kept). */
    readonly rewritten: number;
  };
  readonly prefix: { readonly kept: boolean; readonly broken_at: number | null };
  readonly ms_before_forwarding: number;
  readonly artifacts: readonly ConversationCallView['artifacts'][number][];
  readonly summaries: readonly ConversationCallView['summaries'][number][];
  /** A bill known when recording (fit's estimate); a usage report later replaces it. */
  readonly cost?: ConversationCallView['cost'] | undefined;
}

/** The provider's usage for one call, in disjoint parts (an OpenAI `prompt_tokens` includes its cached tokens: subtract them). */
export interface UsageInput {
  /** Input tokens neither read from nor written to the cache. */
  readonly uncached: number;
  readonly cache_read: number;
  readonly cache_write: number;
  readonly output: number;
}

/** One stored call record (kind `conversation_call`). */
export interface StoredCall extends CallInput {
  readonly v: 1;
  readonly conversation: string;
  readonly call: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/** One stored usage record (kind `conversation_usage`): the usage of a call recorded before, priced. */
export interface StoredUsage {
  readonly v: 1;
  readonly conversation: string;
  readonly call: string;
  readonly usage: UsageInput;
  readonly cost: NonNullable<ConversationCallView['cost']>;
}

/** At most this many artifacts and summaries are kept per call record (a reduction names more rarely). */
export const MAX_REFS = 200;
/** The newest calls a conversation shows. */
export const MAX_CALLS = 200;

const M = 1_000_000;

/**
 * Prices a call from its usage: as sent, and straight (the client's history as it was). Straight,
 * the removed tokens would have been read from the cache at the cached price (or paid as this call
 * paid its input when nothing was read: a cold cache), and the tokens rewritten only because the
 * prefix changed would have been read rather than written.
 */
export function priceUsage(prices: Prices, usage: UsageInput, removed: number, rewritten: number): StoredUsage['cost'] {
  const { uncached, cache_read: read, cache_write: write, output } = usage;
  const usd = (uncached * prices.input + read * prices.cached + write * prices.write + output * prices.output) / M;
  const coldRate = write > 0 ? prices.write : prices.input;
  const removedRate = read > 0 ? prices.cached : coldRate;
  const rewrite = Math.min(Math.max(0, rewritten), write);
  const straight =
    (uncached * prices.input +
      (read + rewrite) * prices.cached +
      (write - rewrite) * prices.write +
      Math.max(0, removed) * removedRate +
      output * prices.output) /
    M;
  return { unit: prices.unit, usd, straight_usd: straight, source: 'usage' };
}

/** A call record as the API shows it, with its usage record when there is one. */
export function callView(c: StoredCall, u: StoredUsage | undefined): ConversationCallView {
  return {
    id: c.call,
    at: new Date(c.at).toISOString(),
    via: c.via,
    provider: c.provider,
    model: c.model,
    outcome: c.outcome,
    reason: c.reason,
    tokens: {
      client: c.tokens.client,
      forwarded: c.tokens.forwarded,
      saved: c.tokens.client - c.tokens.forwarded,
      window: c.tokens.window,
    },
    prefix: { kept: c.prefix.kept, broken_at: c.prefix.broken_at },
    cache: { read: u ? u.usage.cache_read : null, write: u ? u.usage.cache_write : null },
    cost: u ? u.cost : (c.cost ?? null),
    ms_before_forwarding: c.ms_before_forwarding,
    // Records stored before `tokens` and `summarizer` were kept read as null.
    artifacts: c.artifacts.map((a) => ({ ...a, tokens: a.tokens ?? null })),
    summaries: c.summaries.map((s) => ({ ...s, summarizer: s.summarizer ?? null })),
  };
}

/**
 * What the calls avoided against the same calls straight: `straight − usd`, never below zero. A
 * reduction pays its cache rewrite and its summary on its own call and saves on the calls after
 * it, so a conversation's first reduction can cost more than straight until those calls come; and
 * a fit call's bill is fit's estimate of the coming call only (a later fit call reads the history
 * already reduced, so its straight bill no longer holds what the earlier reduction removed). Then
 * nothing was avoided (0), and the two bills, kept as they are, show by how much it cost more.
 */
export function avoided(usd: number, straight: number): number {
  return Math.max(0, straight - usd);
}

/** What a conversation's calls add up to. */
export function totals(calls: readonly ConversationCallView[]): ConversationTotals {
  const outcomes: Record<string, number> = {};
  const bypasses: Record<string, number> = {};
  let saved = 0;
  let breaks = 0;
  const unit = [...calls].reverse().find((c) => c.cost)?.cost?.unit;
  let usd = 0;
  let straight = 0;
  for (const c of calls) {
    outcomes[c.outcome] = (outcomes[c.outcome] ?? 0) + 1;
    if (c.outcome === 'bypass') bypasses[c.reason ?? 'unknown'] = (bypasses[c.reason ?? 'unknown'] ?? 0) + 1;
    saved += c.tokens.saved;
    if (!c.prefix.kept) breaks++;
    if (c.cost && c.cost.unit === unit) {
      usd += c.cost.usd;
      straight += c.cost.straight_usd;
    }
  }
  return {
    calls: calls.length,
    tokens_saved: saved,
    prefix_breaks: breaks,
    outcomes,
    bypasses,
    cost: unit === undefined ? null : { unit, usd, straight_usd: straight, avoided: avoided(usd, straight) },
  };
}

/** One conversation's records, grouped. */
export interface Grouped {
  readonly calls: StoredCall[];
  readonly usage: Map<string, StoredUsage>;
}

/** Groups records by conversation; the calls of each oldest first. Linear in the records (plus the sort). */
export function group(calls: readonly StoredCall[], usage: readonly StoredUsage[]): Map<string, Grouped> {
  const out = new Map<string, Grouped>();
  for (const c of calls) {
    const g = out.get(c.conversation) ?? { calls: [], usage: new Map<string, StoredUsage>() };
    out.set(c.conversation, g);
    g.calls.push(c);
  }
  for (const u of usage) out.get(u.conversation)?.usage.set(u.call, u);
  for (const g of out.values()) g.calls.sort((a, b) => a.at - b.at || a.call.localeCompare(b.call));
  return out;
}

/** A conversation's detail: its newest `MAX_CALLS` calls and their totals. */
export function detail(id: string, g: Grouped): ConversationDetailView {
  const kept = g.calls.slice(-MAX_CALLS);
  const calls = kept.map((c) => callView(c, g.usage.get(c.call)));
  const last = kept[kept.length - 1];
  return {
    id,
    provider: last?.provider ?? 'unknown',
    model: last?.model ?? null,
    totals: totals(calls),
    calls,
    truncated: kept.length < g.calls.length,
  };
}

/** A conversation as the list shows it. */
export function summary(id: string, g: Grouped): ConversationSummaryView {
  const d = detail(id, g);
  return {
    id,
    started_at: d.calls[0]?.at ?? new Date(0).toISOString(),
    last_at: d.calls[d.calls.length - 1]?.at ?? new Date(0).toISOString(),
    provider: d.provider,
    model: d.model,
    totals: d.totals,
  };
}
