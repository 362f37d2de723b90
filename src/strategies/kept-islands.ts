import type { Group, Item } from '../history/types.js';
import type { PreparedHistory } from './types.js';

/**
 * What a cutting strategy keeps below its cut whatever it drops around them: the kept prefix,
 * the first user message's group (the task) when asked for, and every pinned group (a group that
 * holds an instruction, `Item.pinned`: kept like the head). Each is an island of whole groups.
 * Where dropping the messages between two islands would leave a seam the format rejects (in
 * Anthropic, a system message followed by a user turn), the gap is kept too: the islands join,
 * and the seam is the history's own again. Linear in the number of groups.
 */
export interface Islands {
  /** For each message, whether it is kept below any cut (`mendBelow` adds the gaps it keeps). */
  readonly kept: Uint8Array;
  /** Whether the first user turn's groups are kept. */
  readonly keepsFirst: boolean;
}

/** The group that holds message `index`. */
export const groupAt = (h: PreparedHistory, index: number): Group => h.groups[h.groupOf[index] as number] as Group;

/**
 * The islands of a history above `prefix` (messages before it are kept: the head, or fit's
 * summary). `turn` is the first user turn to keep (`firstTurn`; `[-1, -1]`: none), as whole
 * groups; it is kept only where it may follow the prefix, unless its first group is pinned (then
 * the gap before it is kept instead).
 */
export function keptIslands(h: PreparedHistory, prefix: number, turn: readonly [number, number]): Islands {
  const { items, groups, format } = h;
  const n = items.length;
  // Seams are mended once the cut is known (`mendBelow`).
  const kept = new Uint8Array(n);
  kept.fill(1, 0, Math.min(prefix, n));
  const prefixLast: Item | undefined = prefix > 0 ? items[prefix - 1] : undefined;
  let keepsFirst = false;
  const [firstUser, turnEnd] = turn;
  if (firstUser >= prefix && firstUser < n) {
    const group = groupAt(h, firstUser);
    keepsFirst = group.pinned === true || format.canFollow(prefixLast, items[group.start] as Item);
    if (keepsFirst) kept.fill(1, group.start, groupAt(h, Math.max(firstUser, turnEnd - 1)).end);
  }
  for (const group of groups) if (group.pinned && group.start >= prefix) kept.fill(1, group.start, group.end);
  return { kept, keepsFirst };
}

/**
 * Below the cut, keeps each gap between two kept islands where the format would reject their
 * meeting, oldest first (a kept gap restores the original neighbours, which the format accepted);
 * after an empty prefix, the first kept message must be one the format accepts first. Returns the
 * gaps kept, as `[from, to)` ranges. The seam with the tail is the cut's to mend (`lastKeptBefore`).
 */
export function mendBelow(h: PreparedHistory, kept: Uint8Array, prefix: number, cut: number): [number, number][] {
  const { items, format } = h;
  const filled: [number, number][] = [];
  let last = prefix - 1;
  for (let i = Math.max(prefix, 0); i < cut; i++) {
    if (!kept[i]) continue;
    if (i > last + 1 && !format.canFollow(last >= 0 ? items[last] : undefined, items[i] as Item)) {
      kept.fill(1, last + 1, i);
      filled.push([last + 1, i]);
    }
    last = i;
  }
  return filled;
}

/** Tokens of the messages kept from `from` to `to` (exclusive). */
export function keptTokens(h: PreparedHistory, kept: Uint8Array, from: number, to: number): number {
  let tokens = 0;
  for (let i = from; i < to; i++) if (kept[i]) tokens += h.counts[i] as number;
  return tokens;
}

/** The last kept message before `cut` (-1 when none is). */
export function lastKeptBefore(kept: Uint8Array, cut: number): number {
  for (let i = cut - 1; i >= 0; i--) if (kept[i]) return i;
  return -1;
}
