import t from 'tap';
import { MemoryJobRecords } from '../../src/jobs/memory-records.js';
import { type JobRecords, systemClock } from '../../src/jobs/types.js';
import { deferred, flush, embedded as queue } from '../support/jobs.js';

const now = 1_800_000_000_000;
const record = (attempts: number) => ({ state: 'ready' as const, result: { text: 'x' }, attempts, created_at: now });

t.test('memory records: a put replaces, a get returns a copy until the TTL ends, the oldest go past the bound', async (t) => {
  const records = new MemoryJobRecords(3);
  await records.put('a', record(1), 10, now);
  await records.put('a', record(2), 10, now);
  t.match(await records.get('a', now + 9_999), { attempts: 2 }, 'the last put wins');
  const copy = await records.get('a', now);
  if (copy?.result && typeof copy.result === 'object') Object.assign(copy.result, { text: 'changed' });
  t.match(await records.get('a', now), { result: { text: 'x' } }, 'what a reader does to its copy stays with it');
  t.equal(await records.get('a', now + 10_000), undefined, 'gone at the TTL');
  t.equal(records.size, 0, 'and dropped');
  for (const id of ['b', 'c', 'd', 'e']) await records.put(id, record(1), 10, now);
  t.equal(records.size, 3, 'bounded');
  t.equal(await records.get('b', now), undefined, 'the oldest written went first');
  t.ok(await records.get('e', now));
});

t.test('the system clock: a timer fires once; a cancelled one never does', async (t) => {
  t.ok(Math.abs(systemClock.now() - Date.now()) < 60_000, 'it is the wall clock');
  // Its timers are unref'd (they never keep a process alive): this one keeps the test's alive.
  const keepAlive = setTimeout(() => {}, 10_000);
  t.teardown(() => clearTimeout(keepAlive));
  let fired = 0;
  await new Promise<void>((resolve) =>
    systemClock.after(1, () => {
      fired++;
      resolve();
    }),
  );
  const cancel = systemClock.after(1, () => fired++);
  cancel();
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(fired, 1);
});

t.test('the records: an outage fails the add; a later write failure is reported; states expire after the TTL', async (t) => {
  const broken: JobRecords = {
    put: async () => {
      throw new Error('store unavailable');
    },
    get: async () => undefined,
  };
  const down = queue({ records: broken, processor: async () => 'x' });
  await t.rejects(down.q.add('a', 'd'), /store unavailable/);
  await flush();
  t.equal(await down.q.state('a'), undefined, 'nothing was queued');
  await down.q.close();

  const memory = new MemoryJobRecords();
  let failWrites = false;
  const flaky: JobRecords = {
    put: async (...args) => {
      if (failWrites) throw new Error('disk full');
      return memory.put(...args);
    },
    get: (...args) => memory.get(...args),
  };
  const errors: unknown[] = [];
  const gate = deferred<string>();
  const later = queue({ records: flaky, onError: (e) => errors.push(e), processor: () => gate.promise });
  await later.q.add('b', 'd');
  await flush();
  failWrites = true;
  gate.resolve('x');
  await flush();
  t.match(errors, [/disk full/], 'the failed write is reported');
  t.match(await later.q.state('b'), { state: 'running' }, 'the last state written answers');
  await later.q.close();

  const { q, clock } = queue({ ttlSeconds: 60, processor: async () => 'x' });
  await q.add('c', 'd');
  await flush();
  t.equal((await q.state('c'))?.state, 'ready');
  await clock.advance(60_000);
  t.equal(await q.state('c'), undefined, 'gone after the TTL');
  await q.close();
});
