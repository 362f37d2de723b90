import { Worker } from 'node:worker_threads';
import t from 'tap';
import { Limiter } from '../../src/summarizers/limiter.js';

t.test('at most `limit` calls at once, and every waiter runs once a slot frees', async (t) => {
  const limiter = new Limiter(2);
  let active = 0;
  let peak = 0;
  const runs = Array.from({ length: 10 }, (_, i) =>
    limiter.run(async () => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 5 + (i % 3)));
      active--;
      return i;
    }),
  );
  t.same(await Promise.all(runs), [...Array(10).keys()]);
  t.equal(peak, 2);
});

t.test('a failing call frees its slot', async (t) => {
  const limiter = new Limiter(1);
  await t.rejects(
    limiter.run(async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  t.equal(await limiter.run(async () => 'next'), 'next');
});

t.test('threads sharing the integer share the limit', async (t) => {
  const shared = Limiter.shared();
  const mine = new Limiter(1, shared);
  // Another thread holds the only slot for 300 ms.
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const a = workerData;
     Atomics.add(a, 0, 1);
     parentPort.postMessage('taken');
     setTimeout(() => { Atomics.sub(a, 0, 1); Atomics.notify(a, 0, 1); parentPort.postMessage('released'); }, 300);`,
    { eval: true, workerData: shared },
  );
  t.teardown(() => worker.terminate());
  await new Promise((r) => worker.once('message', r));
  const started = performance.now();
  await mine.run(async () => {});
  t.ok(performance.now() - started >= 250, `waited for the other thread's slot (${Math.round(performance.now() - started)} ms)`);
});
