import t from 'tap';
import { EmbeddedJobQueue } from '../../src/jobs/embedded.js';
import { MemoryJobRecords } from '../../src/jobs/memory-records.js';
import { Waiters } from '../../src/jobs/waiters.js';
import { deferred, FakeClock, flush } from '../support/jobs.js';

/** A queue whose job `id` runs until `gate` settles, and a count of its state reads (what a waiter does when woken). */
function setup() {
  const clock = new FakeClock();
  const gate = deferred<string>();
  const q = new EmbeddedJobQueue<string, string>({
    records: new MemoryJobRecords(),
    concurrency: 1,
    ttlSeconds: 600,
    clock,
    processor: () => gate.promise,
  });
  let reads = 0;
  const state = q.state.bind(q);
  q.state = (id) => {
    reads++;
    return state(id);
  };
  return { q, clock, gate, reads: () => reads };
}

/** Tracks whether a promise has settled, without waiting for it. */
function track<T>(promise: Promise<T>) {
  const seen: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => Object.assign(seen, { done: true, value }),
    (error: unknown) => Object.assign(seen, { done: true, error }),
  );
  return seen;
}

t.test('wait returns the current state once its bound runs out, not before (fake clock)', async (t) => {
  const { q, clock, gate } = setup();
  await q.add('j', 'd');
  await flush();
  const waiting = track(q.wait('j', 5000));
  await clock.advance(4999);
  t.equal(waiting.done, false, 'still waiting 1 ms before the bound');
  await clock.advance(1);
  t.equal(waiting.done, true, 'returned at the bound');
  t.equal(waiting.value?.state, 'running', 'with the state at that moment');
  gate.resolve('x');
  await q.close();
});

t.test('wait returns as soon as the job settles, before its bound (the event, not the clock)', async (t) => {
  const { q, clock, gate, reads } = setup();
  await q.add('j', 'd');
  await flush();
  const waiting = track(q.wait('j', 60_000));
  const other = track(q.wait('j', 60_000));
  await flush();
  await clock.advance(30_000);
  t.equal(waiting.done, false);
  const before = reads();
  gate.resolve('summary');
  await flush();
  t.equal(waiting.done, true, 'woken by the job finishing');
  t.match(waiting.value, { state: 'ready', result: 'summary' });
  t.match(other.value, { state: 'ready' }, 'every waiter is woken');
  t.equal(reads() - before, 2, 'one read per waiter when the job settles');
  t.same(clock.pending, [], 'their bound timers were cancelled');
  await q.close();
});

t.test('a wait does not poll: 10 minutes of fake time cost no reads', async (t) => {
  const { q, clock, gate, reads } = setup();
  await q.add('j', 'd');
  await flush();
  const waiting = track(q.wait('j', 600_000));
  await flush();
  const before = reads();
  await clock.advance(599_000);
  t.equal(reads(), before, 'no read while nothing happens');
  t.equal(waiting.done, false);
  gate.resolve('x');
  await flush();
  t.equal(waiting.done, true);
  await q.close();
});

t.test('wait: 0 ms answers at once, an unknown id answers undefined, a finished job answers at once', async (t) => {
  const { q, gate } = setup();
  t.equal(await q.wait('nope', 10_000), undefined, 'unknown id: no waiting');
  await q.add('j', 'd');
  await flush();
  t.equal((await q.wait('j', 0))?.state, 'running');
  gate.resolve('x');
  await flush();
  t.equal((await q.wait('j', 10_000))?.state, 'ready', 'settled already: no waiting');
  await q.close();
});

t.test('wait rejects with the signal reason when the caller goes away; close releases waiters', async (t) => {
  const { q, gate } = setup();
  await q.add('j', 'd');
  await flush();
  const controller = new AbortController();
  const waiting = q.wait('j', 60_000, controller.signal);
  controller.abort(new Error('client closed the request'));
  await t.rejects(waiting, /client closed the request/);
  const aborted = AbortSignal.abort(new Error('already gone'));
  await t.rejects(q.wait('j', 60_000, aborted), /already gone/);

  const released = track(q.wait('j', 60_000));
  await flush();
  const closing = q.close(1);
  gate.resolve('x');
  await closing;
  await flush();
  t.equal(released.done, true, 'close does not leave a waiter hanging until its bound');
});

t.test('Waiters: a read that fails rejects the wait; waiters are forgotten once done', async (t) => {
  const clock = new FakeClock();
  const waiters = new Waiters<string>(clock);
  await t.rejects(
    waiters.wait('x', 1000, async () => {
      throw new Error('store down');
    }),
    /store down/,
  );
  let state: 'running' | 'ready' = 'running';
  const read = async () => ({ state, attempts: 1, created_at: 0 });
  const w = track(waiters.wait('x', 1000, read));
  await flush();
  t.equal(waiters.size, 1);
  waiters.notify('other');
  await flush();
  t.equal(w.done, false, 'an event for another id does not settle it');
  state = 'ready';
  waiters.notify('x');
  await flush();
  t.equal(w.done, true);
  t.equal(waiters.size, 0, 'forgotten');
  const listening = deferred<void>();
  const late = track(waiters.wait('y', 1000, read, undefined, listening.promise));
  await flush();
  t.equal(late.done, false, 'no read before the events are listened to');
  listening.resolve();
  await flush();
  t.equal(late.done, true);
});
