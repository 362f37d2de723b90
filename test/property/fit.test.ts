import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import type { Summarizer, SummaryRequest } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories } from '../support/histories.js';
import { violationsOf } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

class Scripted implements Summarizer {
  readonly kind = 'llm' as const;
  fail = false;
  calls = 0;
  async summarize(_request: SummaryRequest) {
    this.calls++;
    if (this.fail) throw new CompactorError('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'scripted');
    return {
      text: 'Goal: build it. Done: most of it.',
      usage: { input_tokens: 50, output_tokens: 10, cached_input_tokens: 0, calls: 1 },
      model: 'scripted',
    };
  }
  plan() {
    return { calls: [], model: 'scripted' };
  }
}

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(`${format}: fit always returns a valid history, at or under target or saying why`, async (t) => {
    const summarizer = new Scripted();
    const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer });
    await fc.assert(
      fc.asyncProperty(
        arbitrary,
        fc.integer({ min: 0, max: 3000 }),
        fc.boolean(),
        fc.boolean(),
        async (h, target, fail, sections) => {
          summarizer.fail = fail;
          const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
          const summarize = sections ? { mode: 'sections' as const, max_pair_tokens: 64, max_section_tokens: 256 } : {};
          const res = await compactor.run(
            fitStrategy,
            req,
            FitOptions.parse({ target_tokens: target, min_saving_fraction: 0, summarize, policy: 'tokens' }),
          );
          assert.deepEqual(violationsOf(format, res.messages), []);
          assert.deepEqual(schemaErrors(format, res.messages), []);
          assert.ok(res.tokens.after <= res.tokens.before, 'never grows');
          if (res.tokens.before <= target) assert.equal(res.reason, 'below_trigger', 'nothing to do under the target');
          else if (res.tokens.after > target)
            assert.ok(
              res.warnings.some((w) => w.code === 'target_not_met'),
              'over target says so',
            );
          const stages = res.extra.stages.map((s) => s.strategy);
          const compact = res.extra.stages[0];
          if (compact?.applied && compact.tokens_after <= target)
            assert.deepEqual(stages, ['compact'], 'stops after compaction when that suffices');
          if (stages.includes('window')) {
            const summarize = res.extra.stages.find((s) => s.strategy === 'summarize');
            assert.ok(
              !summarize?.applied || summarize.tokens_after > target,
              'windows only after a failed or insufficient summary',
            );
          }
          const summary = res.extra.summary;
          if (summary)
            assert.ok(
              JSON.stringify(res.messages[summary.message_index]).includes('[compactor:summary'),
              'the reported summary is in the history, where the report says (the window never drops it)',
            );
          const text = JSON.stringify(res.messages);
          for (const a of res.extra.artifacts.filter((r) => r.kind.endsWith('_range')))
            assert.ok(text.includes(a.id), `the ${a.kind} ${a.id} is named in the history (the window never drops a summary)`);
          const summarizeStage = res.extra.stages.find((s) => s.strategy === 'summarize');
          const window = res.extra.stages.find((s) => s.strategy === 'window');
          assert.equal(
            res.fallback !== undefined,
            summarizeStage?.reason === 'summarizer_failed' && window?.applied === true,
            'fallback exactly when the window stood in for a failed summary',
          );
          assert.equal(res.usage.total_tokens, res.usage.input_tokens + res.usage.output_tokens);
        },
      ),
      { numRuns: 80 },
    );
    t.pass('properties held');
  });
}
