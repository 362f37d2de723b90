import { CompactorError, fieldError } from '../../errors.js';
import { referencedIds, restoreOffloaded } from '../../history/expand.js';
import { withoutMacs } from '../../history/markers.js';
import type { Item } from '../../history/types.js';
import { SUMMARY_REQUEST } from '../../history/vocabulary.js';
import { scanFactsOnce } from '../../summarizers/fact-memo.js';
import { FactRanker } from '../../summarizers/facts.js';
import { trailOf } from '../../summarizers/trail.js';
import { buildTrail } from '../../summarizers/trail-text.js';
import type { Summarizer, SummaryRequest, TranscriptEntry } from '../../summarizers/types.js';
import { foldWords, NO_WORDS, splitWords, typedWords, type UserWord, wordOf } from '../../summarizers/user-words.js';
import type { PreparedHistory, StrategyContext } from '../types.js';
import type { SummaryOptions } from './options.js';

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
 * What of the tools a range's results answer its own messages do not say: for each result whose
 * call lies before the range, its call id and tool, in order. In a range of consecutive messages
 * a result answered by a call site inside it is named by that call (the latest with its id, as
 * `toolName` finds it), which the range's content holds; only the others are looked up. Calls
 * and results are read as `toolName` and `rangeEntries` read them (the format's sites: a
 * Responses `apply_patch_call` is a call of its item, but no call site, so its output is named by
 * a function call before it); calls only in messages whose item makes any. Any other range:
 * every result's tool (`rangeToolNames`).
 */
export function outsideToolNames(h: PreparedHistory, indexes: readonly number[]): string[] {
  const first = indexes[0] ?? 0;
  if (indexes.length > 0 && (indexes[indexes.length - 1] as number) - first !== indexes.length - 1) {
    return rangeToolNames(h, indexes);
  }
  const made = new Set<string>();
  const out: string[] = [];
  for (const i of indexes) {
    const item = h.items[i];
    const message = h.messages[i];
    if (item === undefined) continue;
    // A call site the item does not list is only looked up (its result listed): the key says more, never less.
    if (item.calls.length > 0) for (const c of h.format.callSites(message)) made.add(c.id);
    for (const r of h.format.resultSites(message)) if (!made.has(r.callId)) out.push(r.callId, toolName(h, r.callId, i));
  }
  return out;
}

/** The tools the results of a range answer, in order (what `rangeEntries` names them by: a call may lie before the range). */
export function rangeToolNames(h: PreparedHistory, indexes: readonly number[]): string[] {
  const names: string[] = [];
  for (const i of indexes) for (const r of h.format.resultSites(h.messages[i])) names.push(toolName(h, r.callId, i));
  return names;
}

/**
 * The messages of a range as transcript entries for the summarizers: each message's prose, its
 * tool calls with their arguments, each tool result as its own entry with the tool's name and
 * status, media as short notes. Format-free: every detail comes from the adapter. With
 * `originals` (`rangeOriginals`), a message is read as it was before compaction. Markers are
 * read without their MACs (`withoutMacs`): noise to a summarizer, and no fact.
 */
export function rangeEntries(
  h: PreparedHistory,
  indexes: readonly number[],
  originals?: ReadonlyMap<number, unknown>,
): TranscriptEntry[] {
  const { format, messages, items } = h;
  const out: TranscriptEntry[] = [];
  for (const i of indexes) {
    const item = items[i] as Item;
    const message = originals?.get(i) ?? messages[i];
    const calls = format.callSites(message);
    for (const r of format.resultSites(message)) {
      out.push({
        role: 'tool',
        text: withoutMacs(r.text),
        calls: [],
        tool: { name: toolName(h, r.callId, i), error: r.error === true, callId: r.callId },
        media: [],
      });
    }
    const text = withoutMacs(format.prose(message));
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
      calls: calls.map((c) => ({
        name: c.name,
        args: c.args ? withoutMacs(JSON.stringify(c.args)) : '',
        id: c.id,
        input: c.args,
      })),
      media,
    });
  }
  return out;
}

/**
 * The range's messages that hold placeholders of compaction (tool results or calls offloaded by an
 * earlier request, or by fit's compaction stage in this one), with their originals put back, by
 * index: what the artifact trail reads, so that the paths, URLs, errors and tests of an output
 * compacted before it was summarized still reach the trail. Originals come from `ctx.pending`
 * (this request's, not stored yet), then from the caller's store (one read); an original that is
 * unknown, expired, or unreadable leaves its placeholder (the trail does less). Without a
 * placeholder in the range, nothing is read. Linear in the range and its originals.
 */
export async function rangeOriginals(
  h: PreparedHistory,
  indexes: readonly number[],
  ctx: Pick<StrategyContext, 'pending' | 'recall' | 'markers'>,
): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  const messages = indexes.map((i) => h.messages[i]);
  if (referencedIds(h.format, ctx.markers, messages).length === 0) return out;
  const lookup = async (ids: readonly string[]) => {
    const found = new Map<string, unknown>();
    const stored: string[] = [];
    for (const id of ids) {
      if (ctx.pending?.has(id)) found.set(id, ctx.pending.get(id));
      else stored.push(id);
    }
    for (const [id, json] of stored.length > 0 && ctx.recall ? await ctx.recall(stored) : [])
      try {
        found.set(id, JSON.parse(json));
      } catch {
        // Unreadable: its placeholder stays.
      }
    return found;
  };
  const restored = await restoreOffloaded(h.format, ctx.markers, messages, lookup);
  restored.messages.forEach((m, k) => {
    if (m !== messages[k]) out.set(indexes[k] as number, m);
  });
  return out;
}

export { type RangeArtifact, rangeArtifact } from './range-artifact.js';

/**
 * What a summarizer is asked for a range: its transcript entries, the earlier summary it extends,
 * the exact facts found in both, the options, and the signal that ends the call (`deadlineOf`).
 * The trail and the facts read the range's `originals` where compaction left placeholders.
 */
export function summaryRequest(
  h: PreparedHistory,
  indexes: readonly number[],
  previous: string | null,
  o: SummaryOptions,
  signal: AbortSignal | undefined,
  planOnly = false,
  originals?: ReadonlyMap<number, unknown>,
  rangeId: string | null = null,
): SummaryRequest {
  // The earlier summary's list of the user's words is carried over, never summarized again.
  const split = previous === null ? null : splitWords(previous);
  const before = split ? split.rest : null;
  if (planOnly) {
    const prose = o.trail_tokens > 0 ? trailOf(before).prose : before;
    return requestFields(rangeEntries(h, indexes), prose, [], 0, undefined, o, signal);
  }
  const on = o.trail_tokens > 0;
  // The earlier summary's trail is merged, not summarized again: the summarizer reads its prose.
  const earlier = on ? trailOf(before) : { prose: before, trail: undefined };
  const entries = rangeEntries(h, indexes);
  // With a trail, paths and URLs are the trail's; the guard ranks the other identifiers, from the
  // same pass over the range that builds the trail. Both read the range as it was before
  // compaction (`originals`); the summarizer reads it as it is.
  const ranker = new FactRanker(on ? (f) => !f.includes('/') : undefined);
  scanFactsOnce(earlier.prose ?? '', ranker.emit);
  const read = on && originals && originals.size > 0 ? rangeEntries(h, indexes, originals) : entries;
  const trail = on ? buildTrail(read, earlier.trail, ranker.emit) : undefined;
  if (!on) for (const e of entries) for (const text of [e.text, ...e.calls.map((c) => c.args)]) scanFactsOnce(text, ranker.emit);
  const ranked = ranker.result(40);
  const words = foldWords(split?.list ?? NO_WORDS, typedIn(h, indexes, rangeId));
  return {
    ...requestFields(
      entries,
      earlier.prose,
      ranked.facts,
      ranked.found,
      trail ? { trail, tokens: o.trail_tokens } : undefined,
      o,
      signal,
    ),
    words,
  };
}

/**
 * The messages the user typed in a range, oldest first (`typedWords`: real user turns, without
 * the context blocks agents inject, nor our own summaries), each bounded (`wordOf`: a long one cut,
 * naming `rangeId`, the artifact that holds the range whole).
 */
function typedIn(h: PreparedHistory, indexes: readonly number[], rangeId: string | null): UserWord[] {
  const words: UserWord[] = [];
  for (const i of indexes) {
    const item = h.items[i] as Item;
    if (item.role !== 'user' || !item.userTurn) continue;
    const prose = h.format.prose(h.messages[i]);
    if (prose === SUMMARY_REQUEST || OURS.test(prose)) continue;
    const typed = typedWords(prose);
    if (typed !== '') words.push(wordOf(typed, rangeId));
  }
  return words;
}

/** The first line of a summary, section summary or QA header of ours (signed or not: a quoted one is no typed request either). */
const OURS = /^\[compactor:(?:summary|section-summary|qa-header) (?:art_[0-9a-f]{24}|none) /;

/** A summary request from its parts (a plan needs only the range, the earlier prose and the options). */
function requestFields(
  entries: SummaryRequest['entries'],
  previous: string | null,
  facts: SummaryRequest['facts'],
  factsFound: SummaryRequest['factsFound'],
  trail: SummaryRequest['trail'],
  o: SummaryOptions,
  signal: AbortSignal | undefined,
): SummaryRequest {
  return {
    entries,
    previous,
    facts,
    factsFound,
    trail,
    maxTokens: o.summarizer.max_tokens,
    model: o.summarizer.model,
    instructions: o.summarizer.prompt,
    temperature: o.summarizer.temperature,
    maxInputTokens: o.max_input_tokens,
    signal,
  };
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
