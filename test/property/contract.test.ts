import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { buildGroups } from '../../src/history/groups.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { STRATEGIES, type StrategyKind } from '../../src/strategies/registry.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories } from '../support/histories.js';
import { adapter, violationsOf } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * The contract every registered strategy keeps (docs/architecture.md, rule 4), run over the registry:
 * a strategy added to `STRATEGIES` without an entry here does not compile, and once it has one, the
 * same checks run on it in every format. The options press each strategy to act on small histories.
 */
const PRESSING: Record<StrategyKind, fc.Arbitrary<Record<string, unknown>>> = {
  window: fc.record({ keep: fc.record({ messages: fc.integer({ min: 0, max: 8 }) }) }),
  compact: fc.record({ keep_tool_uses: fc.integer({ min: 0, max: 2 }), min_tokens: fc.constantFrom(1, 20) }),
  summarize: fc.record({
    keep: fc.record({ messages: fc.integer({ min: 0, max: 8 }) }),
    mode: fc.constantFrom('rolling', 'sections'),
  }),
  // Under policy cost, a limit at the target forces what policy tokens does whenever over it.
  fit: fc.oneof(
    fc.record({ target_tokens: fc.integer({ min: 50, max: 2000 }), policy: fc.constant('tokens') }),
    fc.integer({ min: 50, max: 2000 }).map((target) => ({ target_tokens: target, limit: { tokens: target } })),
  ),
};

const ACTIONS = new Set(['keep', 'rewrite', 'clear', 'offload', 'truncate', 'summarize', 'drop']);
const json = (v: unknown) => JSON.stringify(v);

for (const [kind, strategy] of Object.entries(STRATEGIES) as [StrategyKind, (typeof STRATEGIES)[StrategyKind]][]) {
  for (const [format, arbitrary] of Object.entries(histories)) {
    t.test(`contract: ${kind} on ${format}`, async (t) => {
      const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore() });
      let applied = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary, PRESSING[kind], async (h, pressing) => {
          const options = strategy.options.parse(pressing);
          const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}), model: 'gpt-4o' };
          const before = json(h.messages);
          const res = await compactor.run(strategy as never, req, options as never);
          assert.equal(json(h.messages), before, 'the input is not mutated');
          assert.deepEqual(violationsOf(format, res.messages), [], 'every structural rule holds');
          assert.deepEqual(schemaErrors(format, res.messages), [], "the provider's schema accepts the output");
          assert.ok(res.tokens.saved >= 0 && res.tokens.after <= res.tokens.before, 'tokens never grow');
          assert.equal(res.tokens.before - res.tokens.after, res.tokens.saved);
          assert.equal(res.actions.length, h.messages.length, 'one action per input message');
          res.actions.forEach((a, i) => {
            assert.equal(a.index, i, 'actions in input order');
            assert.ok(ACTIONS.has(a.action), `a known action (${a.action})`);
            assert.ok(a.tokens_freed >= 0 || a.action === 'rewrite', 'only a rewrite may free negative tokens');
          });
          // Kept means untouched: the very input value.
          for (const a of res.actions)
            if (a.action === 'keep') assert.ok(res.messages.includes(h.messages[a.index]), 'kept by reference');
          const groups = buildGroups(adapter(format).parse(h.messages).items);
          const newest = groups[groups.length - 1];
          if (newest) {
            const tail = h.messages.slice(newest.start);
            assert.equal(
              json(res.messages.slice(res.messages.length - tail.length)),
              json(tail),
              'the newest group is byte-identical',
            );
          }
          if (res.applied) applied++;
          if (!res.applied) assert.deepEqual(res.messages, h.messages, 'not applied: the history unchanged');
          const again = await compactor.run(strategy as never, req, options as never);
          assert.equal(json(again.messages), json(res.messages), 'deterministic: the same request, the same answer');
        }),
        { numRuns: 60 },
      );
      t.ok(applied >= 10, `the strategy acted in ${applied} of 60 runs (the options press it)`);
    });
  }
}
