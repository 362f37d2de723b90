import { z } from 'zod';
import { Dropped as DroppedSchema } from '../contract/parts.js';
import type { Markers } from '../history/markers.js';
import type { Entry, Removal } from '../history/plan/types.js';
import type { Item, Warning } from '../history/types.js';
import { firstTurn } from './first-turn.js';
import { keptIslands, keptTokens, lastKeptBefore, mendBelow } from './kept-islands.js';
import type { PreparedHistory, Strategy, StrategyResult } from './types.js';

/** How much of the newest history to keep: exactly one of runs, messages or tokens. */
export const KeepSchema = z
  .strictObject({
    runs: z.number().int().min(0).optional().describe('newest runs kept; 0 still keeps the run in flight'),
    messages: z.number().int().min(0).optional().describe('newest messages kept, grown back to a group boundary'),
    tokens: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('token budget for all kept messages (head and first user message included)'),
  })
  .refine((keep) => Object.values(keep).filter((v) => v !== undefined).length === 1, {
    message: 'give exactly one of runs, messages or tokens',
  })
  .meta({ id: 'Keep', description: 'Exactly one of `runs`, `messages`, `tokens`.' });

export type Keep = z.output<typeof KeepSchema>;

export const WindowOptions = z.strictObject({
  keep: KeepSchema.default({ runs: 10 }).describe('how much of the newest history to keep: runs, messages or tokens'),
  keep_first_user: z
    .boolean()
    .default(true)
    .describe(
      'keep the first user turn (the original task): every user message after the head up to the first assistant-side item, byte-identical',
    ),
});

export type Dropped = z.output<typeof DroppedSchema>;

const sum = (counts: readonly number[], from: number, to: number): number => {
  let total = 0;
  for (let i = from; i < to; i++) total += counts[i] as number;
  return total;
};

/**
 * The requested cut (start of the kept tail), before it is moved to a safe boundary. `floor`: the
 * messages before it are kept whatever the budget (the head, or more: see `windowAbove`). `kept`:
 * messages kept below any cut (`keptIslands`), counted once against a token budget; without it,
 * the first user turn `turn` (`[start, end)`, `[-1, -1]` for none) is.
 */
export function requestedCut(
  h: PreparedHistory,
  keep: Keep,
  turn: readonly [number, number],
  floor = h.head,
  kept?: Uint8Array,
): number {
  const n = h.items.length;
  if (keep.runs !== undefined) {
    const k = Math.max(1, keep.runs);
    return Math.max(floor, k >= h.runStarts.length ? h.head : (h.runStarts[h.runStarts.length - k] as number));
  }
  if (keep.messages !== undefined) return Math.max(floor, n - keep.messages);
  // Token budget: the kept prefix, what is kept anyway and whole groups from the newest back.
  const budget = keep.tokens ?? 0;
  let used = sum(h.counts, 0, floor);
  if (kept) used += keptTokens(h, kept, floor, n);
  else if (turn[0] >= floor) used += sum(h.counts, turn[0], turn[1]);
  let cut = n;
  for (let g = h.groups.length - 1; g >= 0; g--) {
    const group = h.groups[g];
    if (!group || group.kind === 'head' || group.start < floor) break;
    let cost = sum(h.counts, group.start, group.end);
    if (kept) cost -= keptTokens(h, kept, group.start, group.end);
    else if (turn[0] >= floor) cost -= sum(h.counts, Math.max(group.start, turn[0]), Math.min(group.end, turn[1]));
    if (used + cost > budget && cut < n) break;
    used += cost;
    cut = group.start;
  }
  return cut;
}

/**
 * The requested cut moved back to a group start, never past the newest group's start, never into
 * the kept prefix: the start of a tail that keeps whole groups.
 */
export function safeCut(h: PreparedHistory, requested: number, floor = h.head): number {
  const n = h.items.length;
  const newest = h.groups[h.groups.length - 1];
  let cut = newest && newest.kind !== 'head' ? Math.min(requested, newest.start) : n;
  if (cut < n) cut = (h.groups[h.groupOf[cut] as number] as { start: number }).start;
  return Math.max(cut, floor);
}

/**
 * Sliding window (hastekit's sliding-window summarizer; Manning 6.2.2): keeps the head, the first
 * user message (by default) and the newest runs, messages or tokens; drops the rest. The cut is
 * moved back to a group start, never below the newest group, and further back while the format
 * would reject the seam (e.g. two user turns in a row in Anthropic). No LLM, no usage.
 */
function run(
  h: PreparedHistory,
  options: z.output<typeof WindowOptions>,
  ctx: { markers: Markers },
): StrategyResult<{ dropped: Dropped }> {
  return windowAbove(h, options, h.head, ctx.markers);
}

/**
 * The sliding window over the messages from `floor` on: those before it are kept like the head.
 * Fit keeps a summary it has just written this way (the prefix through the summary). Pinned
 * instructions are kept in place with their groups, and so are the gaps whose dropping would
 * leave a seam the format rejects (`keptIslands`).
 */
export function windowAbove(
  h: PreparedHistory,
  options: z.output<typeof WindowOptions>,
  floor: number,
  markers?: Markers,
): StrategyResult<{ dropped: Dropped }> {
  const { items, groups, groupOf, format } = h;
  const n = items.length;
  // The kept prefix ends at a group boundary: a floor inside a group keeps the whole group.
  let head = Math.max(h.head, Math.min(floor, n));
  if (head < n && head > h.head) {
    const g = h.groups[h.groupOf[head] as number] as { start: number; end: number };
    if (g.start < head) head = g.end;
  }
  const warnings: Warning[] = [];
  const turn = options.keep_first_user ? firstTurn(h, markers) : ([-1, -1] as const);
  const { kept } = keptIslands(h, head, turn);
  const requested = requestedCut(h, options.keep, turn, head, kept);
  let cut = safeCut(h, requested, head);
  // The tail's first message must be one the format accepts after the last message kept before it.
  while (cut > head && cut < n) {
    const last = lastKeptBefore(kept, cut);
    if (last === cut - 1 || format.canFollow(last >= 0 ? items[last] : undefined, items[cut] as Item)) break;
    cut = (groups[(groupOf[cut] as number) - 1] as { start: number }).start;
  }
  if (cut < requested) {
    warnings.push({
      code: 'unsafe_cut_avoided',
      message: `kept from message ${cut} instead of ${requested}: a cut there would split a group or break the format's order`,
    });
  }
  for (const [from, to] of mendBelow(h, kept, head, cut)) {
    warnings.push({
      code: 'unsafe_cut_avoided',
      message: `kept messages ${from}–${to - 1}: dropping them would leave a seam ${format.name} rejects next to a kept instruction or the task`,
    });
  }

  const entries: Entry[] = [];
  const removed = new Map<number, Removal>();
  const dropped: Dropped = { messages: 0, runs: 0, tokens: 0, last_dropped_run_id: null };
  let lastRun = -1;
  let lastDroppedIndex = -1;
  for (let i = 0; i < n; i++) {
    const isDropped = i >= head && i < cut && !kept[i];
    if (!isDropped) {
      entries.push({ index: i, edits: [] });
      continue;
    }
    const tokens = h.counts[i] as number;
    removed.set(i, { action: 'drop' });
    dropped.messages++;
    dropped.tokens += tokens;
    const run = h.runOf[i] as number;
    if (run !== lastRun) dropped.runs++;
    lastRun = run;
    lastDroppedIndex = i;
  }
  if (lastDroppedIndex >= 0 && h.runIds) dropped.last_dropped_run_id = h.runIds[lastDroppedIndex] ?? null;
  if (options.keep.tokens !== undefined) {
    const keptTotal = sum(h.counts, 0, n) - dropped.tokens;
    if (keptTotal > options.keep.tokens) {
      warnings.push({
        code: 'target_not_met',
        message: `kept ${keptTotal} tokens, over the ${options.keep.tokens} asked: the head, first user message${head > h.head ? ', the summary' : ''}${h.groups.some((g) => g.pinned) ? ', pinned instructions' : ''} and newest group cannot be dropped`,
      });
    }
  }
  const extra = () => ({ dropped });
  if (dropped.messages === 0) return { warnings, reason: 'nothing_to_reduce', extra };
  return { plan: { entries, removed, artifacts: [] }, warnings, extra };
}

const WINDOW_RESPONSE = { dropped: DroppedSchema.describe('what was dropped') };

export const windowStrategy: Strategy<typeof WindowOptions, { dropped: Dropped }, typeof WINDOW_RESPONSE> = {
  kind: 'window',
  options: WindowOptions,
  response: WINDOW_RESPONSE,
  idle: () => ({ dropped: { messages: 0, runs: 0, tokens: 0, last_dropped_run_id: null } }),
  run,
};
