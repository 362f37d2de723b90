import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { build } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';

const django = loadCorpus().find((x) => x.file.includes('django__django-11138'));

t.test('fit over HTTP: cost decisions, the cost object, and the spend counters', async (t) => {
  if (!django) throw new Error('corpus missing');
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const pricing = { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15, currency: 'USD' };
  const fit = async (extra: Record<string, unknown>) =>
    (
      await app.inject({
        method: 'POST',
        url: '/v1/fit',
        payload: { messages: django.messages, model: 'gpt-5', context_window: 200_000, target_fraction: 0.6, pricing, ...extra },
      })
    ).json();
  const once = await fit({ horizon: { calls: 1 } });
  t.equal(once.applied, false);
  t.equal(once.reason, 'does_not_pay');
  t.equal(once.cost.decision, 'defer');
  t.equal(once.cost.unit, 'USD');
  t.equal(once.cost.pricing, 'request');
  t.equal(once.cost.limit, 200_000 - 16_384);
  t.ok(once.call_again_at > once.tokens.before);
  const many = await fit({ horizon: { calls: 500 } });
  t.equal(many.applied, true, 'the same reduction pays over 500 calls');
  t.equal(many.cost.decision, 'reduce');
  t.ok(many.cost.payback_calls <= 500);
  t.ok(many.cost.tokens_removed >= many.cost.batch_tokens, 'and frees more than waiting for a bigger batch would');
  t.ok(many.cost.saving_per_call * 500 > many.cost.rewrite_cost + many.cost.summarizer_cost);
  const uncached = await fit({ horizon: { calls: 1 }, cache: { enabled: false } });
  t.equal(uncached.applied, true, 'without a prompt cache every saving pays');
  t.equal(uncached.cost.decision, 'reduce');
  t.equal(uncached.cost.tokens_removed, uncached.tokens.saved);
  t.equal(uncached.cost.rewrite_cost, 0);
  const forced = await fit({
    horizon: { calls: 1 },
    limit: { tokens: 30_000 },
    target_tokens: 20_000,
    target_fraction: undefined,
  });
  t.equal(forced.cost.decision, 'forced');
  t.ok(forced.tokens.after <= 30_000);
  const tokens = await fit({ policy: 'tokens', horizon: { calls: 1 }, target_tokens: 40_000, target_fraction: undefined });
  t.equal(tokens.applied, true, 'policy tokens reduces over the target whatever it costs');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_estimated_spend_avoided_total\{unit="USD"\} [0-9.e-]+/);
  const bad = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: { messages: django.messages, target_tokens: 10_000, limit: { tokens: 5000 } },
  });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().errors[0].path, 'limit');
  const unknown = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: { messages: django.messages, target_tokens: 10_000, pricing: { input: 1 } },
  });
  t.equal(unknown.statusCode, 400, 'incomplete pricing is a 400 naming the field');
  t.match(unknown.json().errors[0].path, /^pricing/);
});

t.test('compact and summarize report cost when pricing or usage is given; clear_at_least "auto"', async (t) => {
  if (!django) throw new Error('corpus missing');
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const post = async (url: string, extra: Record<string, unknown>) =>
    (await app.inject({ method: 'POST', url, payload: { messages: django.messages, model: 'gpt-5', ...extra } })).json();
  t.notOk((await post('/v1/compact', {})).cost, 'no cost unless asked');
  const priced = await post('/v1/compact', { pricing: { input: 1.25, cached_input: 0.125, output: 10, currency: 'USD' } });
  t.equal(priced.cost.decision, 'reduce');
  t.equal(priced.cost.tokens_removed, priced.tokens.saved);
  const auto = await post('/v1/compact', { clear_at_least: 'auto', horizon: { calls: 1 } });
  t.equal(auto.applied, false);
  t.equal(auto.reason, 'below_clear_at_least');
  t.ok(auto.cost.break_even_tokens > 0);
  t.equal(auto.cost.pricing, 'table', 'gpt-5 is in the built-in table');
  const uncached = await post('/v1/compact', { clear_at_least: 'auto', horizon: { calls: 1 }, cache: { enabled: false } });
  t.equal(uncached.applied, true, 'without a prompt cache any saving pays');
  t.equal(uncached.cost.break_even_tokens, 0);
  const summary = await post('/v1/summarize', { pricing: { input: 1, cached_input: 0.1, output: 5 }, keep: { messages: 10 } });
  t.equal(summary.cost.unit, 'relative');
  t.equal(summary.cost.summarizer_cost, 0, 'the extractive summarizer bills nothing');
});

t.test('prices from a file and the summarizer pricing variable; bad ones stop the boot naming them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-prices-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'prices.json');
  writeFileSync(
    file,
    JSON.stringify({
      as_of: '2026-12-01',
      models: [{ prefix: 'my-model', input: 2, cached_input: 0.2, output: 6, currency: 'EUR' }],
    }),
  );
  const config = loadConfig({
    COMPACTOR_PRICES_FILE: file,
    COMPACTOR_SUMMARIZER_PRICING: '{"input":0.1,"cached_input":0.01,"output":0.4}',
  });
  t.same(config.COMPACTOR_PRICES_FILE, [{ prefix: 'my-model', input: 2, cached_input: 0.2, output: 6, currency: 'EUR' }]);
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_PRICES_FILE: file });
  const res = (
    await app.inject({
      method: 'POST',
      url: '/v1/fit',
      payload: { messages: [{ role: 'user', content: 'hi' }], model: 'my-model-7b', target_tokens: 1 },
    })
  ).json();
  t.equal(res.cost.unit, 'EUR');
  t.equal(res.cost.pricing, 'table');
  writeFileSync(file, '{"models": [{"prefix": "x"}]}');
  t.throws(() => loadConfig({ COMPACTOR_PRICES_FILE: file }), ConfigError);
  t.throws(() => loadConfig({ COMPACTOR_PRICES_FILE: join(dir, 'missing.json') }), /COMPACTOR_PRICES_FILE.*cannot read/);
  t.throws(() => loadConfig({ COMPACTOR_SUMMARIZER_PRICING: 'nope' }), /COMPACTOR_SUMMARIZER_PRICING/);
});
