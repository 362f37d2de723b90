import type { Caller } from '../../service/artifacts.js';
import type { Compactor } from '../../service/compactor.js';
import { OPERATIONS } from '../../service/operations.js';
import type { PreparedSummaries } from '../../service/prepared-summaries.js';
import type { PreparedEntry } from '../../strategies/types.js';
import { conversationKey, prefixHashes } from '../conversation.js';
import type { Provider, Reducible } from '../providers.js';

/**
 * The proxy's rolling prepared summary for instant compaction: past a share of its window, each
 * proxied conversation gets a summary of its whole history so far prepared off the request path
 * (the preparer's own queue, the `/v1/summarize` operation, the summary cache), started again as
 * the conversation grows, so that an agent's own compaction request finds one covering all but its
 * newest calls. A range is named by the hash of the conversation key and its messages (cache
 * markers left out, as the conversation state hashes them): a later request finds it exactly when
 * it still holds those messages byte-identical, and the same `/v1/summarize` body then hits the
 * summary cache. Linear in the history.
 */

/** A conversation as the rolling summary sees it: its key and the hash of each prefix of its history. */
export interface RollingConversation {
  readonly key: string;
  readonly history: readonly unknown[];
  readonly hashes: readonly string[];
  readonly format: Reducible['format'];
  readonly provider: Provider;
}

/** What the rolling summary runs with. */
export interface RollingDeps {
  readonly compactor: Compactor;
  readonly preparer: PreparedSummaries;
  readonly caller: Caller;
}

/** Fewest new messages since the newest prepared range before another is started. */
export const ROLLING_STEP = 2;

/** The range id of the first `to` messages of a conversation. */
const rangeId = (c: RollingConversation, to: number) => `instant-${(c.hashes[to] ?? '').slice(0, 48)}`;

/** The conversation of a history (its key as the conversation state's, session id included). */
export function rollingConversation(
  provider: Provider,
  reducible: Reducible,
  body: Record<string, unknown>,
  history: readonly unknown[],
  headers: Parameters<Provider['sessionOf']>[0],
): RollingConversation {
  const key = conversationKey(provider, provider.sessionOf(headers, body), reducible.systemOf(body), history[0]);
  return { key, history, hashes: prefixHashes(key, history, provider.markers), format: reducible.format, provider };
}

/**
 * The `/v1/summarize` body whose summary covers the first `to` messages: cache markers left out
 * (they move every call). The task (the first user message and what is pinned with it) stays before
 * the summary, as a rolling summary keeps it: the answer quotes it (`ReadySummary.head`).
 */
export function rollingBody(c: RollingConversation, to: number): Record<string, unknown> {
  const messages = c.history.slice(0, to).map((m) => JSON.parse(c.provider.markers.normalized(m)) as unknown);
  return { messages, format: c.format, mode: 'rolling', keep: { messages: 0 }, store: 'server' };
}

/** The conversation's prepared ranges, newest first. */
function ofConversation(entries: readonly PreparedEntry[], c: RollingConversation): PreparedEntry[] {
  return entries.filter((e) => e.prefix === c.key).sort((a, b) => b.to - a.to);
}

/**
 * Starts a prepared summary of the whole history when none of this conversation is being made and
 * the newest one is `ROLLING_STEP` messages behind or more. Never rejects (the request goes on).
 */
export async function keepRolling(deps: RollingDeps, c: RollingConversation): Promise<boolean> {
  const n = c.history.length;
  if (n < 2) return false;
  const context = await deps.preparer.context(deps.caller.scope);
  if (context.unavailable) return false;
  const mine = ofConversation(context.entries, c);
  if (mine.some((e) => e.state === 'started' || e.state === 'running')) return false;
  // Only a range this history still holds counts: after the agent's own compaction its history is
  // shorter than the range summarized before it (Codex's second compaction would find none).
  const newest = mine.find((e) => (e.state === 'ready' || e.state === 'spliced') && e.to <= n && e.id === rangeId(c, e.to));
  if (newest && n - newest.to < ROLLING_STEP) return false;
  const prepare = { id: rangeId(c, n), prefix: c.key, from: 0, to: n, body: rollingBody(c, n) };
  await deps.preparer.after(deps.caller.scope, { prepare });
  return true;
}

/** A ready prepared summary the history still holds, read from the summary cache. */
export interface ReadySummary {
  readonly entry: PreparedEntry & { usage?: { input_tokens: number; output_tokens: number } };
  /** The messages kept before the summary or joined to it (the task, as a rolling summary keeps it), by index. */
  readonly head: readonly number[];
  /** Where the summary's range really ends (a turn in flight at `entry.to` is kept, not summarized). */
  readonly coveredTo: number;
  readonly text: string;
  readonly artifactId: string | null;
  readonly writtenBy: 'llm' | 'extractive';
}

interface SummaryValue {
  summary: { id: string; text: string; summarizer: 'llm' | 'extractive'; message_index: number } | null;
  artifacts?: { id: string }[];
}

/**
 * The ready prepared summary covering the most of `c`'s history whose range it still holds
 * byte-identical, its text read back through `/v1/summarize` (a summary-cache hit: the same body
 * the preparer ran), and its range's artifact written (the caller bills it once, when it answers). Undefined when none is ready. A read that
 * would call the summarizer again (the cache lost it) is cut at `signal`.
 */
export async function readyRolling(
  deps: RollingDeps,
  c: RollingConversation,
  signal: AbortSignal,
): Promise<ReadySummary | undefined> {
  const context = await deps.preparer.context(deps.caller.scope);
  if (context.unavailable) throw new Error('prepared summaries unavailable');
  const n = c.history.length;
  const entry = ofConversation(context.entries, c).find(
    (e) => (e.state === 'ready' || e.state === 'spliced') && e.to <= n && e.id === rangeId(c, e.to),
  );
  if (!entry) return undefined;
  const op = OPERATIONS['/v1/summarize'];
  const outcome = await op.perform(deps.compactor, rollingBody(c, entry.to), { signal, caller: deps.caller });
  const value = outcome.value as SummaryValue;
  if (!value.summary) return undefined;
  const { summary } = value;
  // The messages kept before the summary (the task) and after it (a turn still in flight) are not in it: the digest covers them.
  const sources = outcome.sources ?? [];
  // The summary may be joined to the task's own message (roles must alternate): that message is quoted too.
  const head = sources.slice(0, summary.message_index + 1).filter((i) => i >= 0);
  const kept = sources.slice(summary.message_index + 1).filter((i) => i >= 0);
  const coveredTo = Math.min(entry.to, ...kept);
  return {
    entry,
    head,
    coveredTo,
    text: summary.text,
    artifactId: /^art_/.test(summary.id) ? summary.id : null,
    writtenBy: summary.summarizer,
  };
}
