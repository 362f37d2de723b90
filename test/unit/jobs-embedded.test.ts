import t from 'tap';
import { EmbeddedJobQueue } from '../../src/jobs/embedded.js';
import { type JobContext, JobQueueClosedError, PermanentJobError } from '../../src/jobs/types.js';
import { deferred, flush, embedded as queue } from '../support/jobs.js';

t.test('concurrent adds of one id queue and run it once; later adds read its state', async (t) => {
  const gate = deferred<string>();
  const seen: string[] = [];
  const { q, events } = queue({
    processor: async (data) => {
      seen.push(data);
      return gate.promise;
    },
  });
  const states = await Promise.all(Array.from({ length: 50 }, (_, i) => q.add('same', `data-${i}`)));
  t.ok(
    states.every((s) => s.state === 'started' || s.state === 'running'),
    'every caller is told it is under way',
  );
  await flush();
  t.same(seen, ['data-0'], 'run once, with the first caller data');
  t.equal(events.counts.added, 1);
  t.equal(events.counts.deduped, 49);
  t.equal((await q.add('same', 'late'))?.state, 'running', 'an add while it runs joins it');
  gate.resolve('summary');
  await flush();
  const after = await q.add('same', 'later still');
  t.equal(after.state, 'ready');
  t.equal(after.result, 'summary');
  t.equal(after.attempts, 1);
  t.same(seen, ['data-0'], 'a finished job is not run again');
  t.same(await q.state('same'), after, 'state reads the same');
  t.equal(await q.state('never-added'), undefined, 'an id never added is unknown');
  await q.close();
});

t.test('at most `concurrency` jobs run at once; the rest start as slots free, oldest first', async (t) => {
  const gates = new Map<string, ReturnType<typeof deferred<string>>>();
  let running = 0;
  let most = 0;
  const started: string[] = [];
  const { q } = queue({
    concurrency: 2,
    processor: async (data) => {
      running++;
      most = Math.max(most, running);
      started.push(data);
      const gate = deferred<string>();
      gates.set(data, gate);
      try {
        return await gate.promise;
      } finally {
        running--;
      }
    },
  });
  for (const id of ['a', 'b', 'c', 'd', 'e']) await q.add(id, id);
  await flush();
  t.same(started, ['a', 'b']);
  t.same(
    await Promise.all(['a', 'b', 'c'].map(async (id) => (await q.state(id))?.state)),
    ['running', 'running', 'started'],
    'the third waits for a slot',
  );
  gates.get('b')?.resolve('B');
  await flush();
  t.same(started, ['a', 'b', 'c'], 'a freed slot takes the oldest queued job');
  for (const id of ['a', 'c']) gates.get(id)?.resolve(id);
  await flush();
  for (const id of ['d', 'e']) gates.get(id)?.resolve(id);
  await flush();
  t.equal(most, 2, 'never more than two at once');
  t.same(await Promise.all(['a', 'b', 'c', 'd', 'e'].map(async (id) => (await q.state(id))?.state)), [
    'ready',
    'ready',
    'ready',
    'ready',
    'ready',
  ]);
  await q.close();
});

t.test('a failed attempt is retried once after the backoff; a second failure fails the job', async (t) => {
  const attempts: JobContext[] = [];
  const { q, clock, events } = queue({
    backoffMs: 1000,
    processor: async (_data, context) => {
      attempts.push(context);
      throw new Error(`upstream 503 on attempt ${context.attempt}`);
    },
  });
  await q.add('x', 'data');
  await flush();
  const between = await q.state('x');
  t.equal(between?.state, 'started', 'waiting for its retry');
  t.equal(between?.attempts, 1);
  t.equal(between?.error, 'upstream 503 on attempt 1');
  t.same(clock.pending, [1000], 'the retry waits for the backoff');
  await clock.advance(999);
  t.equal(attempts.length, 1, 'not before it ends');
  t.equal((await q.add('x', 'again'))?.state, 'started', 'an add while it waits joins it');
  await clock.advance(1);
  t.same(
    attempts.map((c) => c.attempt),
    [1, 2],
  );
  const failed = await q.state('x');
  t.equal(failed?.state, 'failed');
  t.equal(failed?.attempts, 2);
  t.equal(failed?.error, 'upstream 503 on attempt 2');
  t.equal(failed?.finished_at, clock.now());
  t.same(events.order, ['added', 'started', 'retried', 'deduped', 'started', 'failed']);
  await clock.advance(60_000);
  t.equal(attempts.length, 2, 'no third attempt, ever');
  await q.close();
});

t.test('a retry that succeeds makes the job ready; a permanent error is not retried; attempts 1 disables retries', async (t) => {
  let calls = 0;
  const flaky = queue({
    backoffMs: 50,
    processor: async () => {
      calls++;
      if (calls === 1) throw new Error('timeout');
      return 'ok';
    },
  });
  await flaky.q.add('f', 'd');
  await flaky.clock.advance(50);
  const ready = await flaky.q.state('f');
  t.equal(ready?.state, 'ready');
  t.equal(ready?.result, 'ok');
  t.equal(ready?.attempts, 2);
  t.equal(ready?.error, undefined, 'the earlier failure is not reported on success');
  await flaky.q.close();

  const permanent = queue({
    processor: async () => {
      throw new PermanentJobError('bad request');
    },
  });
  await permanent.q.add('p', 'd');
  await flush();
  t.match(await permanent.q.state('p'), { state: 'failed', attempts: 1, error: 'bad request' });
  t.same(permanent.clock.pending, [], 'no retry scheduled');
  await permanent.q.close();

  const once = queue({
    attempts: 1,
    processor: async () => {
      throw new Error('no');
    },
  });
  await once.q.add('o', 'd');
  await flush();
  t.match(await once.q.state('o'), { state: 'failed', attempts: 1 });
  await once.q.close();
});

t.test('close() drains: running jobs finish and are recorded, queued ones are left for later, adds are refused', async (t) => {
  const gates: ReturnType<typeof deferred<string>>[] = [];
  const started: string[] = [];
  const { q, records } = queue({
    concurrency: 2,
    processor: async (data) => {
      started.push(data);
      const gate = deferred<string>();
      gates.push(gate);
      return gate.promise;
    },
  });
  for (const id of ['a', 'b', 'c']) await q.add(id, id);
  await flush();
  let closed = false;
  const closing = q.close(10_000).then(() => {
    closed = true;
  });
  await flush();
  t.equal(closed, false, 'close waits for the running jobs');
  await t.rejects(q.add('d', 'd'), JobQueueClosedError, 'no new job is taken');
  for (const gate of gates) gate.resolve('done');
  await closing;
  t.same(started, ['a', 'b'], 'the queued job was not started');
  t.match(await records.get('a', Date.now()), { state: 'ready', result: 'done' }, 'finished states are in the records');
  t.match(await records.get('b', Date.now()), { state: 'ready' });
  t.match(await records.get('c', Date.now()), { state: 'started' }, 'the queued one is recorded as not done');
});

t.test('a job still running at the close deadline is aborted and redone by the next process', async (t) => {
  let signal: AbortSignal | undefined;
  const { q, clock, records } = queue({
    processor: (_data, context) => {
      signal = context.signal;
      return new Promise<string>(() => {}); // ignores its signal
    },
  });
  await q.add('stuck', 'd');
  await flush();
  const closing = q.close(5000);
  await clock.advance(5000);
  await closing;
  t.equal(signal?.aborted, true, 'its signal was aborted');
  t.match(await records.get('stuck', clock.now()), { state: 'running' }, 'its record still says running');

  // The next process, same records: the record names a job nobody runs, so an add runs it again.
  const runs: number[] = [];
  const next = new EmbeddedJobQueue<string, string>({
    records,
    concurrency: 1,
    ttlSeconds: 60,
    clock,
    processor: async (_d, context) => {
      runs.push(context.attempt);
      return 'redone';
    },
  });
  await next.add('stuck', 'd');
  await flush();
  t.same(runs, [1]);
  t.match(await next.state('stuck'), { state: 'ready', result: 'redone' });
  await next.add('stuck', 'd');
  await flush();
  t.same(runs, [1], 'once finished, the next process does not redo it');
  await next.close();
});

t.test('a listener that throws does not break a job; bad options are refused', async (t) => {
  const { q } = queue({
    listener: () => {
      throw new Error('metrics broke');
    },
    processor: async () => 'fine',
  });
  await q.add('l', 'd');
  await flush();
  t.equal((await q.state('l'))?.state, 'ready');
  await q.close();
  for (const bad of [{ concurrency: 0 }, { attempts: 0 }, { ttlSeconds: 1.5 }]) {
    t.throws(() => queue({ ...bad, processor: async () => 'x' }), RangeError, JSON.stringify(bad));
  }
});
