import t from 'tap';
import { cacheState, callsSoFar } from '../../src/cost/cache.js';
import {
  breakEvenTokens,
  type CostModel,
  economicBatch,
  estimate,
  inputBill,
  usageCost,
  worthIt,
} from '../../src/cost/estimate.js';
import { expectedCallsLeft } from '../../src/cost/model.js';
import { type Prices, PriceTable } from '../../src/cost/prices.js';
import { markers } from '../../src/history/markers.js';
import type { Evaluation } from '../../src/history/plan/evaluate.js';
import { Compactor } from '../../src/service/compactor.js';
import { prepareRequest } from '../../src/service/request-history.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { callMessage, toolResult } from '../support/messages.js';

const ANTHROPIC: Prices = { input: 1, cached: 0.1, write: 1.25, output: 5, unit: 'relative', source: 'request' };

const model = (over: Partial<CostModel> = {}): CostModel => ({
  prices: ANTHROPIC,
  summarizer: { ...ANTHROPIC, write: 1 },
  cache: { end: 10, tokens: 100_000, source: 'usage' },
  occupancy: 100_000,
  fixed: 1000,
  horizon: 50,
  horizonSource: 'request',
  growth: 0,
  calls: 10,
  ...over,
});
const evaluation = (firstChangePrefix: number, saved: number, tail = 0): Evaluation => ({
  edited: [3],
  firstChange: 3,
  unchangedPrefixTokens: firstChangePrefix,
  unchangedTailTokens: tail,
  freed: saved,
  added: 0,
  saved,
  calls: 0,
});

t.test('the input bill: cached reads at the cached price, the rest at the write price, per million', async (t) => {
  t.equal(inputBill(ANTHROPIC, 1_000_000, 0), 0.1);
  t.equal(inputBill(ANTHROPIC, 0, 1_000_000), 1.25);
  t.equal(usageCost(ANTHROPIC, { input_tokens: 2_000_000, cached_input_tokens: 1_000_000, output_tokens: 200_000 }), 1 + 0.1 + 1);
});

t.test("the issue's example: freeing 3.5k tokens near the front rewrites 57k and pays back in about 190 calls", async (t) => {
  // 100k cached; the first edit after 39k of messages (40k with the fixed prefix); 3.5k removed.
  const m = model({ occupancy: 100_000, cache: { end: 10, tokens: 100_000, source: 'usage' }, fixed: 1000 });
  const e = estimate(m, evaluation(39_000, 3500), 0);
  t.equal(e.rewriteTokens, 100_000 - 3500 - 40_000, 'everything written from the first edit to the end');
  // (write − cached) × rewrite, per million
  t.ok(Math.abs(e.rewriteCost - (1.15 * 56_500) / 1e6) < 1e-12);
  t.ok(Math.abs(e.savingPerCall - (0.1 * 3500) / 1e6) < 1e-12);
  t.equal(e.paybackCalls, Math.ceil((1.15 * 56_500) / (0.1 * 3500)));
  t.ok((e.paybackCalls ?? 0) > 180 && (e.paybackCalls ?? 0) < 190);
  t.ok(e.net < 0, 'does not pay over 50 calls');
  t.ok(estimate({ ...m, horizon: 500 }, evaluation(39_000, 3500), 0).net > 0, 'pays over 500');
});

t.test('a reduction after the cached prefix costs nothing to rewrite and pays at once', async (t) => {
  const m = model({ cache: { end: 5, tokens: 50_000, source: 'usage' } });
  const e = estimate(m, evaluation(60_000, 5000), 0);
  t.equal(e.rewriteTokens, 0);
  t.ok(e.rewriteCost < 0, 'the coming call already pays less');
  t.equal(e.paybackCalls, 0);
  t.ok(e.net > 0);
});

t.test('the summarizer bill counts against the reduction', async (t) => {
  const m = model({ horizon: 20 });
  const e = estimate(m, evaluation(1000, 50_000), 0);
  t.ok(e.net > 0);
  t.ok(estimate(m, evaluation(1000, 50_000), 0.1).net < 0, 'a 0.1 bill is more than it saves over 20 calls');
});

t.test('without a cache every saving pays: the plain token logic', async (t) => {
  const m = model({ cache: { end: 0, tokens: 0, source: 'disabled' }, horizon: 1 });
  const e = estimate(m, evaluation(1000, 10), 0);
  t.ok(Math.abs(e.rewriteCost) < 1e-15);
  t.ok(e.net > 0);
  t.ok(Math.abs(e.savingPerCall - 10 / 1e6) < 1e-15, 'saved at the input price');
});

t.test('break-even batch: the saving that pays for a rewrite over the horizon', async (t) => {
  const m = model({ horizon: 50 });
  const tokens = breakEvenTokens(m, 56_500);
  t.equal(tokens, Math.ceil((1.15 * 56_500) / (0.1 * 50)));
  t.equal(breakEvenTokens({ ...m, prices: { ...ANTHROPIC, cached: 0 } }, 1000), Number.POSITIVE_INFINITY);
});

t.test('the horizon: the calls expected under P(more than x left) = t / (t + x), up to 200', async (t) => {
  // Σ_{x=1..200} t / (t + x), by hand: t = 1 is H(201) − 1; t = 20 about 20 · ln(221 / 21).
  t.equal(expectedCallsLeft(0), 4, 'a run that has not made a call yet counts as one call');
  t.equal(expectedCallsLeft(1), 4);
  t.equal(expectedCallsLeft(20), 47);
  t.equal(expectedCallsLeft(100), 109);
  t.equal(expectedCallsLeft(500), 168, 'a long run: close to the 200 it is counted up to');
  t.ok(expectedCallsLeft(1_000_000) <= 200);
});

t.test('the economic batch: the fixed part of a break against the holding cost of what waits', async (t) => {
  // 20,000 in the edited stretch, 5,000 of it freed (share 0.25); growth 800 a call: 200 clearable a call.
  // A break costs (1.25 − 0.1) × 4,000 kept tail tokens, plus a 0.01 summary: 0.0146 per million.
  const m = model({ occupancy: 100_000, fixed: 1000, growth: 800 });
  const e = evaluation(75_000, 5000, 4000);
  const fixed = (1.15 * 4000) / 1e6 + 0.01;
  t.equal(economicBatch(m, ANTHROPIC, e, 0.01), Math.ceil(Math.sqrt((2 * fixed * 1e6 * 200) / 0.1)));
  t.equal(
    economicBatch(m, ANTHROPIC, evaluation(75_000, 5000, 0), 0),
    0,
    'nothing kept after the change, no summary: no reason to wait',
  );
  t.equal(economicBatch({ ...m, growth: 0 }, ANTHROPIC, e, 0), 0, 'a history that does not grow: nothing to wait for');
  t.equal(estimate(m, e, 0.01).batch, economicBatch(m, ANTHROPIC, e, 0.01), 'what estimate reports');
});

t.test('worth it: pays over the horizon, frees the batch, and (estimated horizon) pays back at even odds', async (t) => {
  // Saves 5,000 (0.0005 a call); rewrites (1.15) × 10,000 = 0.0115: pays back in 23 calls.
  const base = model({ cache: { end: 10, tokens: 100_000, source: 'usage' }, occupancy: 100_000, horizon: 40 });
  const e = estimate(base, evaluation(84_000, 5000), 0);
  const payback = e.paybackCalls ?? 0;
  t.ok(payback >= 23 && payback <= 24, `11,500 / 500 (${payback}, rounded up)`);
  t.equal(worthIt(e, base), true, 'a horizon the agent gave is taken at its word');
  t.equal(worthIt(e, { ...base, horizonSource: 'estimated', calls: payback }), true, 'pays back within the calls made so far');
  t.equal(
    worthIt(e, { ...base, horizonSource: 'estimated', calls: payback - 1 }),
    false,
    'a payback longer than the run so far is a bet against even odds',
  );
  t.equal(worthIt(estimate({ ...base, horizon: 22 }, evaluation(84_000, 5000), 0), base), false, 'does not pay over 22 calls');
});

t.test('prices: the request, the table (longest prefix, provider prefix ignored), the format defaults', async (t) => {
  const table = new PriceTable();
  t.same(table.resolve({ input: 3, cached_input: 0.3, output: 15 }, 'x', 'anthropic'), {
    input: 3,
    cached: 0.3,
    write: 3.75,
    output: 15,
    unit: 'relative',
    source: 'request',
  });
  t.equal(table.resolve({ input: 2, cached_input: 0.5, output: 8, currency: 'USD' }, 'x', 'openai-chat').write, 2);
  const mini = table.resolve(undefined, 'openai/gpt-5-mini-2025-08-07', 'openai-chat');
  t.same([mini.input, mini.cached, mini.output, mini.unit, mini.source], [0.25, 0.025, 2, 'USD', 'table']);
  t.equal(table.resolve(undefined, 'gpt-5', 'openai-chat').input, 1.25);
  t.equal(table.resolve(undefined, 'claude-sonnet-4-5-20250929', 'anthropic').write, 3.75);
  t.same(table.resolve(undefined, 'my-local-model', 'anthropic'), {
    input: 1,
    cached: 0.1,
    write: 1.25,
    output: 5,
    unit: 'relative',
    source: 'default',
  });
  const overridden = new PriceTable([{ prefix: 'GPT-5', input: 9, cached_input: 1, output: 20, currency: 'EUR' }]);
  t.same(
    [overridden.resolve(undefined, 'gpt-5', 'openai-chat').input, overridden.resolve(undefined, 'gpt-5', 'openai-chat').unit],
    [9, 'EUR'],
  );
});

const counter = new TokenCounter(1000);
const big = (label: string) => `${label} `.repeat(400);
const history = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'fix the bug' },
  callMessage('a'),
  toolResult('a', big('alpha')),
  callMessage('b'),
  toolResult('b', big('beta')),
  callMessage('c'),
  toolResult('c', big('gamma')),
  callMessage('d'),
  toolResult('d', 'small'),
];

t.test('cache state: from usage (Anthropic fields, OpenAI totals), assumed, partial, disabled', async (t) => {
  const h = prepareRequest({ messages: history, model: 'gpt-4o' }, counter);
  const fixed = 10;
  const before = (end: number) => fixed + h.counts.slice(0, end).reduce((a, b) => a + b, 0);
  t.same(cacheState(h, fixed, undefined, undefined), { end: 8, tokens: before(8), source: 'assumed' }, 'before the newest reply');
  t.same(cacheState(h, fixed, undefined, { enabled: false }), { end: 0, tokens: 0, source: 'disabled' });
  const prompt = before(8);
  t.same(
    cacheState(h, fixed, { prompt_tokens: prompt, completion_tokens: 5, messages_covered: 9 }, undefined),
    { end: 8, tokens: before(8), source: 'usage' },
    'OpenAI caches the whole prompt',
  );
  t.same(
    cacheState(
      h,
      fixed,
      {
        input_tokens: 0,
        cache_read_input_tokens: prompt - 100,
        cache_creation_input_tokens: 100,
        output_tokens: 5,
        messages_covered: 9,
      },
      undefined,
    ),
    { end: 8, tokens: before(8), source: 'usage' },
  );
  const partial = cacheState(
    h,
    fixed,
    {
      input_tokens: before(8) - before(4),
      cache_read_input_tokens: before(4),
      cache_creation_input_tokens: 0,
      output_tokens: 5,
      messages_covered: 9,
    },
    undefined,
  );
  t.same(partial, { end: 4, tokens: before(4), source: 'usage' }, 'an earlier breakpoint: only the prefix it covers');
  const ours = markers('cost-test-secret', 'shared');
  t.same(callsSoFar(h, ours), { total: 4, shown: 4 });
  // A run summarized by an earlier call: the summary's marker says how many messages it stands for.
  const summarized = prepareRequest(
    {
      messages: [
        { role: 'system', content: 'you are an agent' },
        { role: 'user', content: 'fix the bug' },
        { role: 'assistant', content: ours.summary(null, 'own', 60, 'What happened so far.') },
        ...history.slice(2),
      ],
      model: 'gpt-4o',
    },
    counter,
  );
  t.same(
    callsSoFar(summarized, ours),
    { total: 4 + 30, shown: 4 },
    'the calls shown (the summary and the reply after it are one), plus one per two messages it covers',
  );
  t.same(
    callsSoFar(summarized, markers('another-secret', 'shared')),
    { total: 4, shown: 4 },
    'a marker that does not verify counts nothing',
  );
});

t.test('fit under policy cost: defers what does not pay, reduces what does, forces above the limit', async (t) => {
  const compactor = new Compactor(counter, { store: new MemoryStore() });
  const req = { messages: history, model: 'gpt-4o', context_window: 100_000 };
  const fit = (o: Record<string, unknown>) => compactor.run(fitStrategy, req, FitOptions.parse({ target_tokens: 200, ...o }));
  const short = await fit({ horizon: { calls: 1 } });
  t.equal(short.applied, false);
  t.equal(short.reason, 'does_not_pay');
  t.equal(short.extra.cost.decision, 'defer');
  t.ok(short.extra.call_again_at > short.tokens.before);
  t.ok(short.warnings.some((w) => w.code === 'does_not_pay'));
  t.same(short.extra.stages[0], {
    strategy: 'compact',
    applied: false,
    tokens_after: short.tokens.before,
    reason: 'does_not_pay',
    usage: { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0, model: null, total_tokens: 0 },
  });
  const long = await fit({ horizon: { calls: 1000 } });
  t.equal(
    long.applied,
    false,
    'it would pay over 1000 calls, but this history grows so fast that a bigger batch later costs less',
  );
  t.ok(long.extra.cost.tokens_removed < long.extra.cost.batch_tokens);
  t.match(long.warnings.find((w) => w.code === 'does_not_pay')?.message, /waiting until about \d+ can be freed at once/);
  // Thirty small exchanges later, the three large results are a batch worth a break.
  const later = [...history];
  for (let i = 0; i < 30; i++) later.push(callMessage(`s${i}`), toolResult(`s${i}`, 'ok'));
  const batch = await compactor.run(
    fitStrategy,
    { ...req, messages: later },
    FitOptions.parse({ target_tokens: 200, horizon: { calls: 1000 } }),
  );
  t.equal(batch.applied, true);
  t.equal(batch.extra.cost.decision, 'reduce');
  t.ok(batch.extra.cost.tokens_removed >= batch.extra.cost.batch_tokens);
  t.ok(batch.extra.cost.saving_per_call * 1000 > batch.extra.cost.rewrite_cost + batch.extra.cost.summarizer_cost);
  const noCache = await fit({ horizon: { calls: 1 }, cache: { enabled: false } });
  t.equal(noCache.applied, true, 'without a cache, saving tokens is saving money');
  t.equal(noCache.extra.cost.cache.source, 'disabled');
  const forced = await fit({ horizon: { calls: 1 }, limit: { tokens: 500 } });
  t.equal(forced.applied, true);
  t.equal(forced.extra.cost.decision, 'forced');
  t.ok(forced.tokens.after <= 500);
  const tokens = await fit({ policy: 'tokens', horizon: { calls: 1 } });
  t.equal(tokens.applied, true, 'policy tokens reduces whatever it costs');
  t.equal(tokens.extra.cost.limit, 90_000);
});

t.test(
  'fit with the horizon estimated: a reduction that would pay, but only over more calls than the run has made, waits',
  async (t) => {
    const compactor = new Compactor(counter, { store: new MemoryStore() });
    const later = [...history, callMessage('s0'), toolResult('s0', 'ok'), callMessage('s1'), toolResult('s1', 'ok')];
    // A steep write premium: the rewrite takes about 10 calls to repay; the run has made 6.
    const pricing = { input: 1, cached_input: 0.1, cache_write: 4, output: 5 };
    const req = { messages: later, model: 'gpt-4o', context_window: 100_000 };
    const estimated = await compactor.run(fitStrategy, req, FitOptions.parse({ target_tokens: 200, pricing }));
    t.equal(estimated.applied, false);
    t.equal(estimated.extra.cost.decision, 'defer');
    const cost = estimated.extra.cost;
    t.ok((cost.payback_calls ?? 0) > 6 && (cost.payback_calls ?? 0) < cost.horizon_calls, 'it pays over the expected calls');
    t.ok(cost.tokens_removed >= cost.batch_tokens, 'and frees a whole batch');
    t.match(estimated.warnings.find((w) => w.code === 'does_not_pay')?.message, /more than the 6 this run has made so far/);
    const told = await compactor.run(
      fitStrategy,
      req,
      FitOptions.parse({ target_tokens: 200, pricing, horizon: { calls: cost.horizon_calls } }),
    );
    t.equal(told.applied, true, 'the same horizon, given by the agent, is taken at its word');
    t.equal(told.extra.cost.decision, 'reduce');
  },
);

t.test('fit rejects a limit under its target', async (t) => {
  const compactor = new Compactor(counter, { store: new MemoryStore() });
  await t.rejects(
    compactor.run(
      fitStrategy,
      { messages: history, model: 'gpt-4o' },
      FitOptions.parse({ target_tokens: 2000, limit: { tokens: 1000 } }),
    ),
    { code: 'CMP_ERR_OPTIONS_INVALID', errors: [{ path: 'limit' }] },
  );
});
