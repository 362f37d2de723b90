import type { Markers } from '../../../history/markers.js';
import type { Insert } from '../../../history/plan/types.js';
import type { Group, Item } from '../../../history/types.js';
import { SUMMARY_TOOL } from '../../../history/vocabulary.js';
import type { PreparedHistory } from '../../types.js';

/** The vocabulary of sections mode: sections, their pairs, and what a summary pair must fit between. */

export type { SectionsOptions } from '../options.js';

/** The messages around a run of pairs: what a summary pair replacing them must fit between. */
export interface Around {
  prev: Item | undefined;
  next: Item | undefined;
}

/** A body pair: one group (an assistant message and the results that answer it), or a summary written for some. */
export type Pair = { kind: 'original'; group: Group } | { kind: 'summary'; insert: Insert[]; covers: number[] };

export interface Section {
  /** The header: user messages (indexes), or a QA header written anew. */
  header: number[];
  qaHeader?: Insert;
  pairs: Pair[];
}

/**
 * Whether a body pair is a summary pair of ours: assistant text whose section marker verifies, or
 * a call to `compactor_summary` answered (in the group) by a result whose marker verifies. A
 * forged one is a pair like any other, summarized when its section is.
 */
export function isSummaryPair(h: PreparedHistory, markers: Markers, group: Group): boolean {
  const { format, messages } = h;
  const first = messages[group.start];
  if (markers.readSection(format.prose(first))) return true;
  const calls = new Set(
    format
      .callSites(first)
      .filter((c) => c.name === SUMMARY_TOOL)
      .map((c) => c.id),
  );
  if (calls.size === 0) return false;
  for (let i = group.start; i < group.end; i++)
    if (format.resultSites(messages[i]).some((r) => calls.has(r.callId) && markers.readSection(r.text))) return true;
  return false;
}

/**
 * Sections: a header of consecutive user turns, then the groups that answer it. The groups that
 * hold the first user turn `turn` (`firstTurn`) are header whatever their kind (a user message
 * with a part of an unknown type is one group with its neighbours): the task is never summarized.
 */
export function sectionsOf(h: PreparedHistory, turn: readonly [number, number] = [-1, -1]): Section[] {
  const sections: Section[] = [];
  for (const group of h.groups) {
    if (group.kind === 'head') continue;
    const current = sections[sections.length - 1];
    const task = turn[0] >= 0 && group.start < turn[1] && group.end > turn[0];
    if (group.kind === 'user' || task) {
      // The whole group: an instruction that follows the user's words belongs to the header.
      const header = Array.from({ length: group.end - group.start }, (_, k) => group.start + k);
      if (current && current.pairs.length === 0) current.header.push(...header);
      else sections.push({ header, pairs: [] });
      continue;
    }
    if (!current) sections.push({ header: [], pairs: [{ kind: 'original', group }] });
    else current.pairs.push({ kind: 'original', group });
  }
  return sections;
}

/** The last reasoning text among the originals a summary pair replaces (Chat's `reasoning_content`), kept in the current turn. */
export function lastReasoning(h: PreparedHistory, indexes: readonly number[]): string | undefined {
  for (let k = indexes.length - 1; k >= 0; k--) {
    const r = h.format.reasoningText(h.messages[indexes[k] as number]);
    if (r !== undefined) return r;
  }
  return undefined;
}

/** Whether a pair holds a pinned instruction (`Group.pinned`): never summarized, kept where it stands. */
export const pinnedPair = (p: Pair): boolean => p.kind === 'original' && p.group.pinned === true;

/** Whether a section holds a pinned instruction, in its header or its pairs: never merged away. */
export function pinnedSection(h: PreparedHistory, s: Section): boolean {
  return s.header.some((i) => h.items[i]?.pinned === true) || s.pairs.some(pinnedPair);
}

/** The runs of pairs between pinned ones, as `[from, to)` positions in `pairs`. */
export function unpinnedRuns(pairs: readonly Pair[]): [number, number][] {
  const runs: [number, number][] = [];
  let from = 0;
  pairs.forEach((p, k) => {
    if (!pinnedPair(p)) return;
    if (k > from) runs.push([from, k]);
    from = k + 1;
  });
  if (pairs.length > from) runs.push([from, pairs.length]);
  return runs;
}
