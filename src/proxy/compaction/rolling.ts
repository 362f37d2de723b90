import { formatByName } from '../../formats/registry.js';
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

/**
 * And the least growth, as a share of the messages the newest range covers: each range is
 * summarized whole (a summarizer call of about a thousand output tokens), so one per call would
 * cost several times the agent's own compaction (issue 38's bench: 23 summaries in a 60-call
 * session, 1.5× its bill); what a compaction request finds after the newest range is in its
 * deterministic digest.
 */
export const ROLLING_GROWTH = 0.25;

/** Messages the history must have grown by since a range of `to` messages before the next is started. */
export const rollingStep = (to: number): number => Math.max(ROLLING_STEP, Math.ceil(to * ROLLING_GROWTH));

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

/** A rolling summary's `/v1/summarize` body, and the history index of each of its messages. */
export interface RollingBody {
  readonly body: Record<string, unknown>;
  readonly sources: readonly number[];
}

/**
 * Which of `messages` are pinned instructions past the head (an agent's mid-conversation system
 * messages: Claude Code's, after its first user message and after each compaction). None when the
 * history does not parse (the summarizer then refuses it as it is).
 */
function pinnedPastHead(format: Reducible['format'], messages: readonly unknown[]): boolean[] {
  const adapter = formatByName(format);
  try {
    const items = adapter ? adapter.parse(messages).items : [];
    let head = 0;
    while (head < items.length && items[head]?.role === 'system') head++;
    return items.map((item, i) => i >= head && item.pinned === true);
  } catch {
    return [];
  }
}

/**
 * The `/v1/summarize` body whose summary covers the first `to` messages: cache markers left out
 * (they move every call). The task (the first user message and what is pinned with it) stays before
 * the summary, as a rolling summary keeps it: the answer quotes it (`ReadySummary.head`). The
 * agent's pinned instructions past the head are left out of the body: a summary ends at a pinned
 * instruction (it stays where it stands), and Claude Code pins one after its first user message and
 * after each of its compactions, so a range holding one would give no summary at all; the answer
 * replaces the whole history anyway, and the agent writes its instructions again after it.
 */
export function rollingBody(c: RollingConversation, to: number): RollingBody {
  const normalized = c.history.slice(0, to).map((m) => JSON.parse(c.provider.markers.normalized(m)) as unknown);
  const pinned = pinnedPastHead(c.format, normalized);
  const messages: unknown[] = [];
  const sources: number[] = [];
  normalized.forEach((m, i) => {
    if (pinned[i]) return;
    messages.push(m);
    sources.push(i);
  });
  return { body: { messages, format: c.format, mode: 'rolling', keep: { messages: 0 }, store: 'server' }, sources };
}

/** The conversation's prepared ranges, newest first. */
function ofConversation(entries: readonly PreparedEntry[], c: RollingConversation): PreparedEntry[] {
  return entries.filter((e) => e.prefix === c.key).sort((a, b) => b.to - a.to);
}

/** The conversation's ready ranges whose messages `c` still holds byte-identical, newest first. */
function heldBy(mine: readonly PreparedEntry[], c: RollingConversation): PreparedEntry[] {
  const n = c.history.length;
  return mine.filter((e) => (e.state === 'ready' || e.state === 'spliced') && e.to <= n && e.id === rangeId(c, e.to));
}

/** Ready ranges read back, newest first, before a compaction request passes: one may have given no summary. */
export const READ_TRIES = 3;

/**
 * Starts a prepared summary of the whole history when none of this conversation is being made and
 * the newest one is `rollingStep` messages behind or more. Never rejects (the request goes on).
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
  const newest = heldBy(mine, c)[0];
  if (newest && n - newest.to < rollingStep(newest.to)) return false;
  const prepare = { id: rangeId(c, n), prefix: c.key, from: 0, to: n, body: rollingBody(c, n).body };
  await deps.preparer.after(deps.caller.scope, { prepare });
  return true;
}

/** A ready prepared summary the history still holds, read from the summary cache. */
export interface ReadySummary {
  readonly entry: PreparedEntry & { usage?: { input_tokens: number; output_tokens: number } };
  /** The messages kept before the summary or joined to it (the task, as a rolling summary keeps it), by index. */
  readonly head: readonly number[];
  /** The pinned instructions before `coveredTo` left out of the summary's range (`rollingBody`), by index, in order. */
  readonly pinned: readonly number[];
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
 * the preparer ran), and its range's artifact written (the caller bills it once, when it answers).
 * Undefined when none is ready. A read that would call the summarizer again (the cache lost it) is
 * cut at `signal`.
 */
export async function readyRolling(
  deps: RollingDeps,
  c: RollingConversation,
  signal: AbortSignal,
): Promise<ReadySummary | undefined> {
  const context = await deps.preparer.context(deps.caller.scope);
  if (context.unavailable) throw new Error('prepared summaries unavailable');
  // The newest first; an older one when it gave no summary (nothing to summarize before its turn in
  // flight, or no smaller than its range): the digest then covers more. Each read is a cache hit.
  for (const entry of heldBy(ofConversation(context.entries, c), c).slice(0, READ_TRIES)) {
    const ready = await readOne(deps, c, entry, signal);
    if (ready) return ready;
  }
  return undefined;
}

/** One ready range read back: its summary, and which messages before its end it does not stand for. */
async function readOne(
  deps: RollingDeps,
  c: RollingConversation,
  entry: PreparedEntry,
  signal: AbortSignal,
): Promise<ReadySummary | undefined> {
  const op = OPERATIONS['/v1/summarize'];
  const { body, sources: of } = rollingBody(c, entry.to);
  const outcome = await op.perform(deps.compactor, body, { signal, caller: deps.caller });
  const value = outcome.value as SummaryValue;
  if (!value.summary) return undefined;
  const { summary } = value;
  // The output's messages, as history indices: those up to the summary's are the task kept before it
  // (the summary may be joined to the task's own message, roles must alternate: that one is quoted
  // too); those after it, a turn still in flight, kept. The digest covers both.
  const sources = (outcome.sources ?? []).map((i) => (i >= 0 ? (of[i] ?? -1) : -1));
  const head = sources.slice(0, summary.message_index + 1).filter((i) => i >= 0);
  let coveredTo = entry.to;
  for (const i of sources.slice(summary.message_index + 1)) if (i >= 0 && i < coveredTo) coveredTo = i;
  // The pinned instructions the body left out, below the range's end: outside the summary too.
  const inBody = new Set(of);
  const pinned: number[] = [];
  for (let i = 0; i < coveredTo; i++) if (!inBody.has(i)) pinned.push(i);
  return {
    entry,
    head,
    pinned,
    coveredTo,
    text: summary.text,
    artifactId: /^art_/.test(summary.id) ? summary.id : null,
    writtenBy: summary.summarizer,
  };
}
