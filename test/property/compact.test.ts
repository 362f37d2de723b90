import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import type { Item } from '../../src/history/types.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { type CompactOptions, compactStrategy } from '../../src/strategies/compact.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories, markedHistories } from '../support/histories.js';
import { adapter, violationsOf } from '../support/invariants.js';
import { markerPool, marksOf } from '../support/marks.js';
import { schemaErrors } from '../support/schemas.js';

const options = fc.record({
  keep_tool_uses: fc.integer({ min: 0, max: 4 }),
  min_tokens: fc.integer({ min: 0, max: 150 }),
  exclude_tools: fc.constantFrom<string[][]>([], ['grep']),
  clear_tool_inputs: fc.boolean(),
  rules: fc.constantFrom<CompactOptions['rules'][]>(
    [],
    [{ tool: 'bash', placeholder: 'Ran {args.command|"?"} ({tokens} tokens, {id})', keep_last: 1 }],
  ),
  dedupe: fc.boolean(),
  truncate_tokens: fc.option(fc.integer({ min: 16, max: 120 }), { nil: undefined }),
  target_tokens: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined }),
  store: fc.constantFrom('server' as const, 'inline' as const, 'none' as const),
});

const json = (v: unknown) => JSON.stringify(v);

function withoutId(message: unknown): unknown {
  if (typeof message !== 'object' || message === null || !('id' in message)) return message;
  const { id: _id, ...rest } = message as Record<string, unknown>;
  return rest;
}

/**
 * The messages whose thinking `clear_thinking` keeps, computed on its own terms: turns start at
 * real user messages (tool-result carriers are not turns); the newest `keepTurns` turns with an
 * assistant message, and the turn the history ends in, are kept.
 */
function keptTurns(items: readonly Item[], keepTurns: number): Set<number> {
  const turns: number[][] = [[]];
  for (const item of items) {
    if (item.userTurn) turns.push([]);
    else (turns[turns.length - 1] as number[]).push(item.index);
  }
  const open = turns[turns.length - 1] as number[];
  const withAssistant = turns.filter((turn) => turn.some((i) => items[i]?.role === 'assistant'));
  return new Set([...withAssistant.slice(Math.max(0, withAssistant.length - keepTurns)).flat(), ...open]);
}

/** The JSON of every tool result unit, in order, with the message it sits in. */
function resultUnits(format: string, messages: readonly unknown[]): string[] {
  const a = adapter(format);
  return messages.flatMap((m) => a.resultSites(m).map((r) => json(a.unitAt(m, 'result', r.slot))));
}

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(`${format}: compaction is valid, reversible to the byte, idempotent, and never grows`, async (t) => {
    const store = new MemoryStore();
    const compactor = new Compactor(new TokenCounter(20_000), { store });
    await fc.assert(
      fc.asyncProperty(arbitrary, options, async (h, o) => {
        const opts: CompactOptions = { ...o };
        const before = json(h.messages);
        const req = { messages: h.messages, format: h.format, model: 'gpt-4o', ...(h.system ? { system: h.system } : {}) };
        const res = await compactor.run(compactStrategy, req, opts);
        assert.equal(json(h.messages), before, 'input not mutated');
        assert.deepEqual(violationsOf(format, res.messages), [], 'every structural rule holds');
        assert.deepEqual(schemaErrors(format, h.messages), [], "the generated input passes the provider's schema");
        assert.deepEqual(schemaErrors(format, res.messages), [], "the output passes the provider's schema");
        assert.ok(res.tokens.after <= res.tokens.before, 'tokens never grow');
        assert.equal(res.messages.length, h.messages.length, 'compaction drops no message');
        res.messages.forEach((m, i) => {
          const action = res.actions[i]?.action;
          if (action === 'keep') assert.equal(m, h.messages[i], `message ${i} kept as the same value`);
          else assert.ok((res.actions[i]?.tokens_freed ?? 0) > 0, `message ${i} rewritten only to save tokens`);
        });
        // The newest keep_tool_uses results are byte-identical.
        const inUnits = resultUnits(format, h.messages);
        const outUnits = resultUnits(format, res.messages);
        const k = Math.min(o.keep_tool_uses, inUnits.length);
        assert.deepEqual(outUnits.slice(outUnits.length - k), inUnits.slice(inUnits.length - k), 'newest results untouched');
        // The newest group is byte-identical.
        const last = h.messages.length - 1;
        if (last >= 0) assert.equal(json(res.messages[last]), json(h.messages[last]), 'newest message untouched');

        // Idempotent: compacting the output changes nothing.
        const again = await compactor.run(compactStrategy, { ...req, messages: res.messages }, opts);
        assert.equal(json(again.messages), json(res.messages), 'compact(compact(x)) == compact(x)');

        // Reversible: expand restores the input byte-exact (lossy only with store: none).
        const inline = opts.store === 'inline' ? res.extra.artifacts.map((a) => ({ id: a.id, content: a.content })) : undefined;
        const expanded = await compactor.expand({ messages: res.messages, format: h.format, artifacts: inline });
        if (opts.store === 'none') {
          assert.equal(expanded.restored, 0);
        } else {
          assert.deepEqual(expanded.missing, []);
          assert.equal(json(expanded.messages), before, 'expand(compact(x)) == x');
        }
      }),
      { numRuns: 150 },
    );
    t.pass('properties held');
  });

  t.test(`${format}: clear_thinking removes whole thinking outside the newest turns and the turn in progress`, async (t) => {
    const compactor = new Compactor(new TokenCounter(5000), { store: new MemoryStore() });
    let removed = 0;
    await fc.assert(
      fc.asyncProperty(arbitrary, fc.integer({ min: 0, max: 3 }), fc.boolean(), async (h, keepTurns, withoutIds) => {
        // Responses items sent without their server ids are tied to no reasoning item.
        const messages = withoutIds ? h.messages.map(withoutId) : h.messages;
        const req = { messages, format: h.format };
        const res = await compactor.run(compactStrategy, req, {
          keep_tool_uses: 3,
          min_tokens: 100,
          exclude_tools: [],
          clear_tool_inputs: false,
          rules: [],
          dedupe: false,
          clear_thinking: { keep_turns: keepTurns },
          store: 'server',
        });
        assert.deepEqual(violationsOf(format, res.messages), []);
        const a = adapter(format);
        const inItems = a.parse(messages).items;
        const kept = keptTurns(inItems, keepTurns);
        // Where each input message is in the output: only reasoning items are ever dropped.
        let dropped = 0;
        inItems.forEach((item, i) => {
          const action = res.actions[i]?.action;
          if (action === 'drop') {
            assert.ok(item.thinking && !kept.has(i), `message ${i} dropped: a reasoning item outside the kept turns`);
            dropped++;
            return;
          }
          // Only thinking changes an assistant message here (no clear_tool_inputs); results may be compacted.
          if (item.role !== 'assistant') return;
          const out = res.messages[i - dropped];
          if (kept.has(i) || i === messages.length - 1) {
            assert.equal(
              json(out),
              json(messages[i]),
              `message ${i}: the kept turns and the turn in progress keep their thinking`,
            );
          } else if (out !== undefined && a.parse([out]).items[0]?.thinking) {
            assert.equal(json(out), json(messages[i]), `message ${i}: thinking kept only where the message is untouched`);
          }
        });
        assert.equal(res.messages.length, messages.length - dropped);
        if (res.actions.some((x) => x.action !== 'keep' && inItems[x.index]?.thinking)) removed++;
      }),
      { numRuns: 80 },
    );
    t.ok(removed >= 1, `thinking was removed in ${removed} of 80 runs`);
  });
}

for (const format of Object.keys(histories) as (keyof typeof histories)[]) {
  t.test(`${format}: text that looks like ours is the user's: expand(compact(x)) == x`, async (t) => {
    const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), secret: 'marks-0123456789abcdef' });
    const arbitrary = markedHistories(marksOf(await markerPool(compactor)))[format];
    let offloaded = 0;
    await fc.assert(
      fc.asyncProperty(arbitrary, options, fc.constantFrom('server' as const, 'inline' as const), async (h, o, store) => {
        const req = { messages: h.messages, format: h.format, model: 'gpt-4o', ...(h.system ? { system: h.system } : {}) };
        const res = await compactor.run(compactStrategy, req, { ...o, store });
        assert.deepEqual(violationsOf(format, res.messages), [], 'every structural rule holds');
        offloaded += res.extra.artifacts.length;
        const inline = store === 'inline' ? res.extra.artifacts.map((a) => ({ id: a.id, content: a.content })) : undefined;
        const expanded = await compactor.expand({ messages: res.messages, format: h.format, artifacts: inline });
        assert.equal(json(expanded.messages), json(h.messages), 'expand(compact(x)) == x');
      }),
      { numRuns: 100 },
    );
    t.ok(offloaded > 0, `${offloaded} originals offloaded`);
  });
}
