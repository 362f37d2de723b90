import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { windowStrategy } from '../../src/strategies/sliding-window.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { build } from '../support/app.js';
import { type GeneratedHistory, histories } from '../support/histories.js';
import { checkKeepOrDrop } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

const keep = fc.oneof(
  fc.record({ runs: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ messages: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ tokens: fc.integer({ min: 0, max: 3000 }) }),
);
const options = fc.record({ keep, keep_first_user: fc.boolean() });

function request(h: GeneratedHistory, withRunIds: boolean) {
  const runIds = withRunIds ? h.messages.map((_, i) => `run-${Math.floor(i / 5)}`) : undefined;
  return {
    messages: h.messages,
    format: h.format,
    ...(h.system ? { system: h.system } : {}),
    ...(runIds ? { run_ids: runIds } : {}),
    model: 'gpt-4o',
  };
}

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(`${format}: window output keeps every structural rule, never mutates, never grows`, async (t) => {
    const compactor = new Compactor(new TokenCounter(10_000));
    await fc.assert(
      fc.asyncProperty(arbitrary, options, fc.boolean(), async (h, opts, withRunIds) => {
        const before = JSON.stringify(h.messages);
        const req = request(h, withRunIds);
        const res = await compactor.run(windowStrategy, req, opts);
        assert.equal(JSON.stringify(h.messages), before, 'input not mutated');
        checkKeepOrDrop(format, h.messages, res.messages, res.actions);
        assert.deepEqual(schemaErrors(format, res.messages), [], "the output passes the provider's schema");
        assert.ok(res.tokens.after <= res.tokens.before, 'tokens never grow');
        const { run_ids: _runIds, ...plain } = req;
        const counted = compactor.tokens({ ...plain, messages: res.messages });
        const original = compactor.tokens(plain);
        assert.ok(counted.total <= original.total, 'counted output never larger than input');
        assert.equal(res.tokens.saved, original.total - counted.total, 'saved equals the counted difference');
        assert.equal(res.extra.dropped.messages, h.messages.length - res.messages.length, 'dropped count matches');
        const kept = new Set(res.messages);
        if (opts.keep_first_user) {
          const first = h.messages.findIndex((m) => (m as { role: string }).role === 'user');
          if (first >= 0) assert.ok(kept.has(h.messages[first]), 'first user message kept');
        }
        // Kept messages are the very input values, not copies.
        for (const m of res.messages) assert.ok(h.messages.includes(m), 'kept by reference');
      }),
      { numRuns: 200 },
    );
    t.pass('property held');
  });

  t.test(`${format}: the same through HTTP (app.inject), byte-identical kept messages`, async (t) => {
    const app = await build(t);
    await fc.assert(
      fc.asyncProperty(arbitrary, options, async (h, opts) => {
        const res = await app.inject({ method: 'POST', url: '/v1/window', payload: { ...request(h, false), ...opts } });
        assert.equal(res.statusCode, 200, res.body.slice(0, 300));
        const body = res.json() as { messages: unknown[]; actions: { index: number; action: string }[] };
        checkKeepOrDrop(format, h.messages, body.messages, body.actions);
      }),
      { numRuns: 40 },
    );
    t.pass('property held');
  });
}
