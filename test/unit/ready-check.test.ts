import t from 'tap';
import { CachedCheck } from '../../src/plugins/app/ready-check.js';

t.test('a cached check: answered once per period, its failure named, a hung check cut at the timeout', async (t) => {
  let now = 0;
  let calls = 0;
  let fail = false;
  const check = new CachedCheck(
    'the queue',
    async () => {
      calls++;
      if (fail) throw new Error('down');
    },
    { cacheMs: 1000, now: () => now },
  );
  t.same(await check.state(), { ok: true });
  t.same(await check.state(), { ok: true });
  t.equal(calls, 1, 'reused within the period');
  fail = true;
  now = 1000;
  t.same(await check.state(), { ok: false, reason: 'the queue cannot be reached' });
  t.equal(calls, 2);
  fail = false;
  now = 2000;
  t.same(await check.state(), { ok: true }, 'recovers with the dependency');
});

t.test('a check that never settles counts as failed, and is not started again while it runs', async (t) => {
  let calls = 0;
  const check = new CachedCheck(
    'the queue',
    () => {
      calls++;
      return new Promise<void>(() => {});
    },
    { timeoutMs: 10 },
  );
  t.same(await check.state(), { ok: false, reason: 'the queue did not answer within 10 ms' });
  await check.state();
  t.equal(calls, 1);
});
