import type { Item, Violation } from './types.js';

/**
 * The pairing rule every format shares (docs/strategies.md, guarantee 1): the results of a message's tool calls
 * come in the contiguous block of result-carrying messages right after it, each call is answered
 * exactly once, and no result stands without its call. A trailing block whose calls are not all
 * answered yet is in flight and allowed. An item of a type the service does not know (`sticky`)
 * between a call and its results is passed over: what it is, the provider knows.
 */
export function pairingViolations(items: readonly Item[]): Violation[] {
  const violations: Violation[] = [];
  const n = items.length;
  let i = 0;
  while (i < n) {
    const item = items[i] as Item;
    if (item.results.length > 0) {
      for (const id of item.results) {
        violations.push({
          index: i,
          rule: 'orphan_tool_result',
          message: `result for tool call ${JSON.stringify(id)} does not follow the message that made the call`,
        });
      }
      i++;
      continue;
    }
    // The calls of one model response: this item and every following item that joins it.
    let end = i + 1;
    while (end < n && items[end]?.joinsPrevious) end++;
    const calls = end === i + 1 ? item.calls : items.slice(i, end).flatMap((it) => it.calls);
    if (calls.length === 0) {
      i = end;
      continue;
    }
    // Most responses: one call, answered by the next message alone (what the loop below finds, without its sets).
    const next = items[end];
    const after = items[end + 1];
    if (
      calls.length === 1 &&
      next?.results.length === 1 &&
      next.results[0] === calls[0] &&
      next.calls.length === 0 &&
      (!after || after.results.length === 0 || after.calls.length > 0 || after.joinsPrevious)
    ) {
      i = end + 1;
      continue;
    }
    const pending = new Set<string>();
    for (const id of calls) {
      if (pending.has(id)) {
        violations.push({
          index: i,
          rule: 'duplicate_tool_call_id',
          message: `tool call id ${JSON.stringify(id)} appears twice in one response`,
        });
      }
      pending.add(id);
    }
    const answered = new Set<string>();
    let j = end;
    for (; j < n; j++) {
      const next = items[j] as Item;
      // An item of an unknown type between the calls and their results does not end the block.
      if (next.sticky && next.calls.length === 0 && next.results.length === 0 && pending.size > 0) continue;
      if (next.results.length === 0 || next.calls.length > 0 || next.joinsPrevious) break;
      for (const id of next.results) {
        if (answered.has(id)) {
          violations.push({
            index: j,
            rule: 'duplicate_tool_result',
            message: `tool call ${JSON.stringify(id)} is answered more than once`,
          });
        } else if (!pending.has(id)) {
          violations.push({
            index: j,
            rule: 'orphan_tool_result',
            message: `result for tool call ${JSON.stringify(id)}, which message ${i} did not make`,
          });
        } else {
          pending.delete(id);
          answered.add(id);
        }
      }
    }
    if (pending.size > 0 && j < n) {
      violations.push({
        index: i,
        rule: 'unanswered_tool_call',
        message: `tool call(s) ${[...pending].map((id) => JSON.stringify(id)).join(', ')} have no result before message ${j}`,
      });
    }
    i = j;
  }
  return violations;
}
