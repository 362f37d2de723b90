import type { Group, GroupKind, Item } from './types.js';

/**
 * Splits a history into groups (docs/strategies.md, "Groups"): the head of leading system messages, user turns,
 * assistant messages without tool calls, and tool exchanges (one assistant message with calls
 * plus every following message that carries their results). A trailing exchange whose calls are
 * not all answered yet is the in-flight group. A pinned instruction joins the group before it
 * (which is then pinned), and an item of an unknown type is never separated from its neighbours
 * (`Item.pinned`, `Item.sticky`). Cuts are safe only at group starts.
 *
 * Assumes the pairing rules hold (the service rejects a history that breaks them before any
 * strategy runs); on a broken history it still returns a partition, never throws.
 */
export function buildGroups(items: readonly Item[]): Group[] {
  const out: Group[] = [];
  for (const group of plainGroups(items)) {
    const prev = out[out.length - 1];
    const joins = prev !== undefined && prev.kind !== 'head' && joinsGroupBefore(items, group.start);
    if (!joins) {
      out.push(group);
      continue;
    }
    const pinned = prev.pinned === true || items[group.start]?.pinned === true;
    const kind = attachedKind(prev, group, items);
    out[out.length - 1] = { kind, start: prev.start, end: group.end, ...(pinned ? { pinned } : {}) };
  }
  return out;
}

/** Whether the group starting at `start` belongs with the one before it: a pinned instruction, or a seam next to an unknown item. */
function joinsGroupBefore(items: readonly Item[], start: number): boolean {
  const item = items[start];
  return item?.pinned === true || item?.sticky === true || items[start - 1]?.sticky === true;
}

/** The kind of two groups joined: an instruction takes its turn's kind; an in-flight call stays in flight; else `other`. */
function attachedKind(prev: Group, next: Group, items: readonly Item[]): GroupKind {
  if (next.kind === 'in_flight') return 'in_flight';
  const onlyInstructions = items.slice(next.start, next.end).every((it) => it.pinned === true);
  return onlyInstructions || prev.kind === next.kind ? prev.kind : 'other';
}

/** An unknown item with neither calls nor results, between a call and its results: it does not end the exchange. */
const transparent = (item: Item): boolean => item.sticky === true && item.calls.length === 0 && item.results.length === 0;

/** The groups before pinned instructions and unknown items join their neighbours. */
function plainGroups(items: readonly Item[]): Group[] {
  const groups: Group[] = [];
  const n = items.length;
  let i = 0;
  while (i < n && items[i]?.role === 'system' && items[i]?.sticky !== true) i++;
  if (i > 0) groups.push({ kind: 'head', start: 0, end: i });
  while (i < n) {
    // One model response: an item plus every following item that joins it.
    let end = i + 1;
    while (end < n && items[end]?.joinsPrevious) end++;
    const calls = new Set<string>();
    for (let k = i; k < end; k++) for (const id of (items[k] as Item).calls) calls.add(id);
    if (calls.size > 0) {
      let j = end;
      while (j < n) {
        const next = items[j] as Item;
        if (calls.size > 0 && transparent(next)) {
          j++;
          continue;
        }
        if (next.results.length === 0 || next.calls.length > 0 || next.joinsPrevious) break;
        for (const id of next.results) calls.delete(id);
        j++;
      }
      const kind: GroupKind = calls.size > 0 && j === n ? 'in_flight' : 'tool_exchange';
      groups.push({ kind, start: i, end: j });
      i = j;
      continue;
    }
    const item = items[i] as Item;
    let kind: GroupKind = 'other';
    if (item.role === 'user' && item.userTurn) kind = 'user';
    else if (item.role === 'assistant') kind = 'assistant';
    groups.push({ kind, start: i, end });
    i = end;
  }
  return groups;
}

/** For each message, the index of the group that holds it. */
export function groupIndexOf(groups: readonly Group[], length: number): Int32Array {
  const out = new Int32Array(length);
  groups.forEach((group, g) => {
    for (let i = group.start; i < group.end; i++) out[i] = g;
  });
  return out;
}

/** Number of leading system messages: the head, which every strategy keeps verbatim. */
export function headLength(groups: readonly Group[]): number {
  const first = groups[0];
  return first?.kind === 'head' ? first.end : 0;
}

/**
 * Run starts, oldest first (message indexes, after the head). A run is a contiguous block of
 * messages with the same run id (an id that reappears later starts a new run); without
 * `runIds`, a run starts at every real user turn. Messages between the head and the first user
 * turn form a run of their own.
 */
export function runStarts(items: readonly Item[], head: number, runIds?: readonly string[]): number[] {
  const starts: number[] = [];
  for (let i = head; i < items.length; i++) {
    if (i === head) {
      starts.push(i);
      continue;
    }
    const startsRun = runIds ? runIds[i] !== runIds[i - 1] : (items[i] as Item).userTurn;
    if (startsRun) starts.push(i);
  }
  return starts;
}

/** Index of the first real user turn after the head, or -1. */
export function firstUserTurn(items: readonly Item[], head: number): number {
  for (let i = head; i < items.length; i++) if ((items[i] as Item).userTurn) return i;
  return -1;
}
