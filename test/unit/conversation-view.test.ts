import fc from 'fast-check';
import t from 'tap';
import type { Prices } from '../../src/cost/prices.js';
import {
  avoided,
  type CallInput,
  detail,
  group,
  MAX_CALLS,
  priceUsage,
  type StoredCall,
  type StoredUsage,
  totals,
} from '../../src/service/conversation-view.js';

const PRICES: Prices = { input: 3, cached: 0.3, write: 3.75, output: 15, unit: 'USD', source: 'table' };

const entry: CallInput = {
  via: 'proxy',
  provider: 'anthropic',
  format: 'anthropic',
  model: 'claude-sonnet-4-5',
  outcome: 'unchanged',
  reason: 'below_trigger',
  tokens: { client: 1000, forwarded: 1000, window: 200_000, rewritten: 0 },
  prefix: { kept: true, broken_at: null },
  ms_before_forwarding: 1,
  artifacts: [],
  summaries: [],
};

const near = (a: number, b: number) => Math.abs(a - b) < 1e-12;

const stored = (conversation: string, call: string, at: number, over: Partial<CallInput> = {}): StoredCall => ({
  ...entry,
  ...over,
  v: 1,
  conversation,
  call,
  at,
});

t.test('a call is priced from its usage, as sent and straight', async (t) => {
  const usage = { uncached: 100, cache_read: 5000, cache_write: 800, output: 200 };
  const same = priceUsage(PRICES, usage, 0, 0);
  t.equal(same.usd, (100 * 3 + 5000 * 0.3 + 800 * 3.75 + 200 * 15) / 1e6);
  t.equal(same.straight_usd, same.usd, 'nothing removed, nothing rewritten: straight is the same bill');
  const removed = priceUsage(PRICES, usage, 4000, 0);
  t.ok(near(removed.straight_usd - removed.usd, (4000 * 0.3) / 1e6), 'the removed tokens would have been read from the cache');
  const cold = priceUsage(PRICES, { uncached: 100, cache_read: 0, cache_write: 800, output: 0 }, 4000, 0);
  t.ok(near(cold.straight_usd - cold.usd, (4000 * 3.75) / 1e6), 'a cold cache: they would have been written as this call wrote');
  const rewritten = priceUsage(PRICES, usage, 0, 5000);
  t.ok(near(rewritten.straight_usd - rewritten.usd, (800 * (0.3 - 3.75)) / 1e6), 'a rewrite counts at most what the call wrote');
});

t.test('property: straight − sent = removed at the read rate − rewritten at the write premium', async () => {
  const n = fc.integer({ min: 0, max: 2_000_000 });
  fc.assert(
    fc.property(n, n, n, n, n, n, (uncached, read, write, output, removed, rewritten) => {
      const cost = priceUsage(PRICES, { uncached, cache_read: read, cache_write: write, output }, removed, rewritten);
      const rate = read > 0 ? PRICES.cached : write > 0 ? PRICES.write : PRICES.input;
      const expected = (removed * rate - Math.min(rewritten, write) * (PRICES.write - PRICES.cached)) / 1e6;
      return cost.usd >= 0 && cost.straight_usd >= 0 && Math.abs(cost.straight_usd - cost.usd - expected) < 1e-9;
    }),
  );
});

t.test('totals add calls up: outcomes, bypasses by reason, breaks, spend in the newest unit', async (t) => {
  const g = group(
    [
      stored('c', 'b', 2, { outcome: 'bypass', reason: 'unknown_model' }),
      stored('c', 'a', 1, {
        outcome: 'reduced',
        reason: null,
        tokens: { ...entry.tokens, forwarded: 400 },
        prefix: { kept: false, broken_at: 3 },
      }),
      stored('c', 'c', 3, {
        outcome: 'bypass',
        reason: 'unknown_model',
        cost: { unit: 'relative', usd: 5, straight_usd: 5, source: 'estimate' },
      }),
      stored('d', 'x', 1),
    ],
    [],
  );
  const c = g.get('c');
  if (!c) throw new Error('grouped');
  t.same(
    c.calls.map((x) => x.call),
    ['a', 'b', 'c'],
    'oldest first',
  );
  const usage: StoredUsage = {
    v: 1,
    conversation: 'c',
    call: 'a',
    usage: { uncached: 0, cache_read: 10, cache_write: 0, output: 0 },
    cost: { unit: 'USD', usd: 1, straight_usd: 3, source: 'usage' },
  };
  c.usage.set('a', usage);
  const d = detail('c', c);
  t.same(d.calls[0]?.cache, { read: 10, write: 0 }, 'the usage record joins its call');
  t.match(d.totals, {
    calls: 3,
    tokens_saved: 600,
    prefix_breaks: 1,
    outcomes: { reduced: 1, bypass: 2 },
    bypasses: { unknown_model: 2 },
  });
  t.same(d.totals.cost, { unit: 'relative', usd: 5, straight_usd: 5, avoided: 0 }, 'costs in the newest call’s unit only');
  t.same(totals([]).cost, null);
});

t.test('avoided is never negative: a reduction that cost more than straight so far avoided nothing', async (t) => {
  // As a fit-only record has it: the reduced call billed its rewrite and summary (estimate), the later ones as is.
  const fit = (call: string, at: number, usd: number, straight: number) =>
    stored('f', call, at, { via: 'fit', cost: { unit: 'USD', usd, straight_usd: straight, source: 'estimate' } });
  const g = group([fit('a', 1, 0.01, 0.01), fit('b', 2, 0.05, 0.02), fit('c', 3, 0.011, 0.011)], []).get('f');
  if (!g) throw new Error('grouped');
  const cost = detail('f', g).totals.cost;
  t.ok(cost && near(cost.usd, 0.071) && near(cost.straight_usd, 0.041), 'both bills as they are');
  t.equal(cost?.avoided, 0, 'nothing avoided, not a negative saving');
  const paid = group([fit('a', 1, 0.05, 0.02), fit('b', 2, 0.01, 0.06)], []).get('f');
  if (!paid) throw new Error('grouped');
  t.ok(near(detail('f', paid).totals.cost?.avoided ?? -1, 0.02), 'once the later calls save more, the difference');
  fc.assert(
    fc.property(fc.double({ min: 0, max: 1e3, noNaN: true }), fc.double({ min: 0, max: 1e3, noNaN: true }), (usd, straight) => {
      const a = avoided(usd, straight);
      return a >= 0 && (straight >= usd ? a === straight - usd : a === 0);
    }),
  );
});

t.test('a conversation shows its newest MAX_CALLS calls', async (t) => {
  const calls = Array.from({ length: MAX_CALLS + 5 }, (_, i) => stored('c', `k${String(i).padStart(4, '0')}`, i));
  const g = group(calls, []).get('c');
  if (!g) throw new Error('grouped');
  const d = detail('c', g);
  t.equal(d.calls.length, MAX_CALLS);
  t.equal(d.truncated, true);
  t.equal(d.calls[0]?.id, 'k0005');
});
