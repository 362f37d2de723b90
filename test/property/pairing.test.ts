import fc from 'fast-check';
import t from 'tap';
import { pairingViolations } from '../../src/history/pairing.js';
import type { Item, Violation } from '../../src/history/types.js';

/**
 * The pairing rule's shortcut for the common response (one call, answered by the next message
 * alone: issue 40) finds exactly what the full walk finds. The reference is the walk as it was
 * before the shortcut, kept here as the oracle; on any sequence of calls, results, joined
 * messages and unknown items.
 */
// biome-ignore format: the walk as it was, verbatim
function reference(items: readonly Item[]): Violation[] {
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

const ids = fc.constantFrom('a', 'b', 'c');
const item = fc.record({
  role: fc.constantFrom('user', 'assistant', 'tool') as fc.Arbitrary<Item['role']>,
  calls: fc.array(ids, { maxLength: 2 }),
  results: fc.array(ids, { maxLength: 2 }),
  joinsPrevious: fc.boolean(),
  sticky: fc.boolean(),
});

t.test('the shortcut finds what the full walk finds', async (t) => {
  fc.assert(
    fc.property(fc.array(item, { maxLength: 10 }), (drawn) => {
      const items: Item[] = drawn.map((d, index) => ({
        index,
        role: d.role,
        userTurn: d.role === 'user',
        calls: d.calls,
        results: d.results,
        thinking: false,
        original: {},
        ...(d.joinsPrevious ? { joinsPrevious: true } : {}),
        ...(d.sticky ? { sticky: true } : {}),
      }));
      t.same(pairingViolations(items), reference(items));
    }),
    { numRuns: 3000 },
  );
});
