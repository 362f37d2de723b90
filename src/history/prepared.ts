import type { FormatAdapter } from './format.js';
import { buildGroups, firstUserTurn, groupIndexOf, headLength, runStarts } from './groups.js';
import type { Group, Item } from './types.js';

/** A parsed, checked and counted history: what every strategy receives. Never mutated. */
export interface PreparedHistory {
  readonly format: FormatAdapter;
  readonly messages: readonly unknown[];
  readonly items: readonly Item[];
  readonly groups: readonly Group[];
  /** For each message, the index of its group in `groups`. */
  readonly groupOf: Int32Array;
  /** Number of leading system messages. */
  readonly head: number;
  /** Index of the first real user turn after the head, or -1. */
  readonly firstUser: number;
  /** Message index where each run starts, oldest first. */
  readonly runStarts: readonly number[];
  /** For each message, its run's index in `runStarts` (-1 for the head). */
  readonly runOf: Int32Array;
  readonly runIds: readonly string[] | undefined;
  /** Counted tokens per message, framing included. */
  readonly counts: readonly number[];
  /** What triggers and targets compare against: reported usage plus counted tokens after it. */
  readonly occupancy: number;
}

/**
 * A history ready for the strategies: its groups, head, first user turn and runs derived from its
 * items. Counting is the caller's (the counts arrive with the messages), so this stays free of
 * any tokenizer; the same function prepares a request's history and the view a plan leaves.
 */
export function prepareHistory(fields: {
  format: FormatAdapter;
  messages: readonly unknown[];
  items: readonly Item[];
  counts: readonly number[];
  runIds: readonly string[] | undefined;
  occupancy: number;
}): PreparedHistory {
  const { items, runIds } = fields;
  const groups = buildGroups(items);
  const head = headLength(groups);
  const starts = runStarts(items, head, runIds);
  const runOf = new Int32Array(items.length).fill(-1);
  starts.forEach((start, r) => {
    const end = starts[r + 1] ?? items.length;
    for (let i = start; i < end; i++) runOf[i] = r;
  });
  return {
    ...fields,
    groups,
    groupOf: groupIndexOf(groups, items.length),
    head,
    firstUser: firstUserTurn(items, head),
    runStarts: starts,
    runOf,
  };
}
