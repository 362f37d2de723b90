import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories } from '../support/histories.js';
import { violationsOf } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

/** A summarizer that always fails: fit's window stands in, the stage that used to drop silently. */
class Failing implements Summarizer {
  readonly kind = 'llm' as const;
  async summarize(): Promise<never> {
    throw new CompactorError('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'down');
  }
  plan() {
    return { calls: [], model: 'failing' };
  }
}

const json = (v: unknown) => JSON.stringify(v);

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(
    `${format}: every range fit's window removes has a marker; expand(fit(x)) == x; a second fit never wraps a marker`,
    async (t) => {
      const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer: new Failing() });
      let windowed = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary, fc.integer({ min: 0, max: 1500 }), async (h, target) => {
          const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
          const options = FitOptions.parse({
            target_tokens: target,
            min_saving_fraction: 0,
            policy: 'tokens',
            compact: { min_tokens: 100_000 },
          });
          const res = await compactor.run(fitStrategy, req, options);
          assert.deepEqual(violationsOf(format, res.messages), [], 'valid');
          assert.deepEqual(schemaErrors(format, res.messages), []);
          const dropped = res.actions.filter((a) => a.action === 'drop').length;
          if (dropped === 0) return;
          const unmarked = res.warnings.some((w) => w.code === 'window_unmarked');
          const text = json(res.messages);
          if (!unmarked) {
            windowed++;
            assert.ok(text.includes('[compactor:window art_'), 'a marker names the removed range');
            assert.ok(
              /were removed here to fit the context window: \d+ tool calls, \d+ tokens\./.test(text),
              'and says what was there',
            );
            assert.ok(
              res.extra.artifacts.some((a) => a.kind === 'window_range'),
              'the range is an artifact',
            );
            const expanded = await compactor.expand({ messages: res.messages, format: h.format });
            assert.equal(json(expanded.messages), json(h.messages), 'expand restores it byte-exact');
          }
          // The same history again (nothing new): a marker is never wrapped in another.
          const again = await compactor.run(fitStrategy, { ...req, messages: res.messages }, options);
          // No range the second fit stored holds a marker: an earlier marker is folded (chained), never wrapped.
          for (const a of again.extra.artifacts.filter((r) => r.kind === 'window_range')) {
            const stored = await compactor.artifact(a.id);
            assert.ok(!json(stored.content).includes('[compactor:window '), 'no marker of a marker');
          }
          if (!unmarked && !again.warnings.some((w) => w.code === 'window_unmarked')) {
            const back = await compactor.expand({ messages: again.messages, format: h.format });
            assert.equal(json(back.messages), json(h.messages), 'expand restores through a second fit');
          }
        }),
        { numRuns: 60 },
      );
      t.ok(windowed > 0, `the window ran and marked (${windowed} runs)`);
    },
  );
}
