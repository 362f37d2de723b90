import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories } from '../support/histories.js';
import { violationsOf } from '../support/invariants.js';

/** Prices as an agent would give them: cached cheaper than input, a write premium or none. */
const pricing = fc.option(
  fc.record({
    input: fc.constant(1),
    cached_input: fc.double({ min: 0.05, max: 1, noNaN: true }),
    cache_write: fc.double({ min: 1, max: 1.5, noNaN: true }),
    output: fc.constant(5),
  }),
  { nil: undefined },
);

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(
    `${format}: under policy cost, fit never leaves a history over the limit when a valid one fits, and makes only reductions that pay`,
    async (t) => {
      const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore() });
      await fc.assert(
        fc.asyncProperty(
          arbitrary,
          fc.integer({ min: 0, max: 3000 }),
          fc.integer({ min: 0, max: 3000 }),
          fc.option(fc.integer({ min: 1, max: 400 }), { nil: undefined }),
          pricing,
          fc.boolean(),
          async (h, target, headroom, horizon, prices, cached) => {
            const req = {
              messages: h.messages,
              format: h.format,
              context_window: 1_000_000,
              ...(h.system ? { system: h.system } : {}),
            };
            const limit = target + headroom;
            const res = await compactor.run(
              fitStrategy,
              req,
              FitOptions.parse({
                target_tokens: target,
                limit: { tokens: limit },
                ...(horizon ? { horizon: { calls: horizon } } : {}),
                ...(prices ? { pricing: prices } : {}),
                ...(cached ? {} : { cache: { enabled: false } }),
              }),
            );
            assert.deepEqual(violationsOf(format, res.messages), []);
            assert.ok(res.tokens.after <= res.tokens.before, 'never grows');
            const cost = res.extra.cost;
            const before = res.tokens.before;
            if (before > limit) {
              assert.equal(cost.decision, 'forced', 'over the limit, a reduction is forced');
              assert.ok(
                res.tokens.after <= limit || res.warnings.some((w) => w.code === 'target_not_met'),
                'under the limit, or no valid history is (the irreducible part is named)',
              );
              return;
            }
            const paid = cost.saving_per_call * cost.horizon_calls - cost.rewrite_cost - cost.summarizer_cost;
            if (cost.decision === 'reduce') {
              assert.equal(res.applied, true);
              assert.ok(paid > -1e-6, `a reduction made pays over the horizon (${paid})`);
              if (!horizon)
                assert.ok(
                  (cost.payback_calls ?? Number.POSITIVE_INFINITY) <= Math.max(1, cost.calls_so_far),
                  'with the horizon estimated, within the calls the run has made',
                );
              assert.ok(res.tokens.saved > 0);
            } else {
              assert.equal(cost.decision, 'defer');
              assert.equal(res.applied, false);
              assert.ok(['does_not_pay', 'nothing_to_reduce'].includes(res.reason ?? ''), res.reason);
              const longBet = !horizon && (cost.payback_calls ?? Number.POSITIVE_INFINITY) > Math.max(1, cost.calls_so_far);
              assert.ok(
                paid <= 1e-6 || cost.tokens_removed < cost.batch_tokens || longBet,
                `what was not made would not pay (${paid}), or not yet enough to be worth a break, or (horizon estimated) not within the calls so far`,
              );
              assert.ok(
                res.extra.call_again_at > before && res.extra.call_again_at <= limit + 1,
                'call again when it pays, or at the limit',
              );
              if (!cached)
                assert.ok(
                  cost.saving_per_call <= 0 || cost.summarizer_cost > 0,
                  "without a cache nothing is rewritten: only a summarizer's bill can keep a saving from paying",
                );
            }
          },
        ),
        { numRuns: 80 },
      );
      t.pass('properties held');
    },
  );
}
