import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import { BullJobQueue } from '../../src/jobs/bullmq.js';
import { type BullJobQueueOptions, bullJobId } from '../../src/jobs/bullmq-options.js';
import { openBullJobQueue } from '../../src/jobs/index.js';
import { JobQueueClosedError, PermanentJobError } from '../../src/jobs/types.js';
import { counting, deferred, settle } from '../support/jobs.js';
import { REDIS_URL, redisAvailable } from '../support/redis.js';

const redis = await redisAvailable();
const skip = redis ? false : `no Redis answers at ${REDIS_URL}`;
if (!redis) console.log(`# skipping the BullMQ tests: ${skip}`);

/** A key prefix of its own for each test of this run, removed afterwards with every key under it. */
function prefixFor(t: Test): string {
  const prefix = `compactor-test-jobs-${randomUUID().slice(0, 8)}`;
  t.teardown(async () => {
    const client = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await client.quit();
  });
  return prefix;
}

type Options = BullJobQueueOptions<string, string>;

/**
 * A TypeScript file in a child process, run as this test runs (the same loader: under tap, its
 * TypeScript loader, so that the child's coverage merges with this process's).
 */
const typescript = (file: string, ...args: string[]) =>
  spawn(process.execPath, [...process.execArgv, file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });

/** A replica: its own queue object and connections; closed at the test's end. */
function replica(t: Test, options: Partial<Options> & Pick<Options, 'prefix' | 'processor'>) {
  const q = new BullJobQueue<string, string>({ url: REDIS_URL, concurrency: 2, ttlSeconds: 60, ...options });
  t.teardown(() => q.close(1000));
  return q;
}

t.test('two replicas sharing Redis run each id once, however often and wherever it is added', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const runs = new Map<string, number>();
  const processor = async (data: string, { id }: { id: string }) => {
    runs.set(id, (runs.get(id) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    return `summary of ${data}`;
  };
  const a = counting();
  const b = counting();
  const one = replica(t, { prefix, processor, listener: a.listener });
  const two = replica(t, { prefix, processor, listener: b.listener });
  const ids = Array.from({ length: 12 }, (_, i) => `tenant-1:range:${i}`);
  // Every id added three times by each replica, all at once.
  await Promise.all(ids.flatMap((id) => [one, two, one, two, one, two].map((q) => q.add(id, id))));
  const states = await Promise.all(ids.map((id) => settle(one, id, 30_000)));
  t.same(
    states.map((s) => s?.state),
    ids.map(() => 'ready'),
  );
  t.same(
    ids.map((id) => runs.get(id)),
    ids.map(() => 1),
    'each id ran exactly once',
  );
  t.equal(a.counts.added + b.counts.added, ids.length, 'one add per id created it');
  t.equal(a.counts.deduped + b.counts.deduped, ids.length * 5, 'the others found it');
  t.equal(a.counts.completed + b.counts.completed, ids.length, 'completed once per id, on whichever replica ran it');
  t.match(await two.state(ids[0] ?? ''), { state: 'ready', result: `summary of ${ids[0]}`, attempts: 1 });
  await two.add(ids[0] ?? '', 'again');
  t.equal(runs.get(ids[0] ?? ''), 1, 'a finished id is not run again while its state is kept');
  t.equal(await one.state('tenant-2:range:0'), undefined, 'an id nobody added is unknown');
});

t.test(
  'a failed attempt is retried once with backoff, then the job fails; a permanent error fails at once',
  { skip },
  async (t) => {
    const prefix = prefixFor(t);
    const attempts = new Map<string, number[]>();
    const events = counting();
    const q = replica(t, {
      prefix,
      backoffMs: 50,
      listener: events.listener,
      processor: async (data, { id, attempt }) => {
        attempts.set(id, [...(attempts.get(id) ?? []), attempt]);
        if (data === 'permanent') throw new PermanentJobError('the upstream refused the request');
        if (data === 'always' || attempt === 1) throw new Error(`attempt ${attempt} failed`);
        return 'ok';
      },
    });
    await Promise.all([q.add('flaky', 'once'), q.add('broken', 'always'), q.add('refused', 'permanent')]);
    const [flaky, broken, refused] = await Promise.all(['flaky', 'broken', 'refused'].map((id) => settle(q, id, 30_000)));
    t.match(flaky, { state: 'ready', result: 'ok', attempts: 2 });
    t.match(broken, { state: 'failed', error: 'attempt 2 failed', attempts: 2 });
    t.ok((broken?.finished_at ?? 0) >= (broken?.created_at ?? Infinity), 'finished after it was created');
    t.match(refused, { state: 'failed', error: 'the upstream refused the request', attempts: 1 });
    t.same(Object.fromEntries(attempts), { flaky: [1, 2], broken: [1, 2], refused: [1] });
    t.equal(events.counts.retried, 2, 'flaky and broken were retried');
    t.equal(events.counts.failed, 2, 'broken and refused failed');
    // A waiter woken by the failure reads the state, then the job: never a failed job without its error.
    const many = Array.from({ length: 20 }, (_, i) => `refused-${i}`);
    await Promise.all(many.map((id) => q.add(id, 'permanent')));
    const failed = await Promise.all(many.map((id) => settle(q, id, 30_000)));
    t.same(
      failed.map((s) => [s?.state, s?.error]),
      many.map(() => ['failed', 'the upstream refused the request']),
      'every failed job carries its error',
    );
  },
);

t.test('a job survives a restart of the queue object; its state is readable after reconnecting', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const never = async (): Promise<string> => {
    throw new Error('a producer runs nothing');
  };
  const producer = new BullJobQueue<string, string>({
    url: REDIS_URL,
    prefix,
    concurrency: 1,
    ttlSeconds: 60,
    work: false,
    processor: never,
  });
  t.match(await producer.add('kept', 'data'), { state: 'started', attempts: 0 });
  await producer.close();
  await t.rejects(producer.add('other', 'data'), JobQueueClosedError, 'a closed queue takes no job');

  const restarted = replica(t, { prefix, processor: async (data) => `done: ${data}` });
  t.match(await settle(restarted, 'kept', 30_000), { state: 'ready', result: 'done: data' }, 'the new object ran it');
  await restarted.close();

  const reader = await openBullJobQueue<string, string>({
    url: REDIS_URL,
    prefix,
    concurrency: 1,
    ttlSeconds: 60,
    work: false,
    processor: never,
  });
  t.teardown(() => reader.close());
  t.match(await reader.state('kept'), { state: 'ready', result: 'done: data', attempts: 1 }, 'a third object reads it');
});

t.test('wait honours its bound on a job that is still running; close lets a running job finish', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const gate = deferred<string>();
  const inside = deferred<void>();
  const q = replica(t, {
    prefix,
    processor: () => {
      inside.resolve();
      return gate.promise;
    },
  });
  await q.add('slow', 'd');
  await inside.promise;
  t.match(await settle(q, 'slow', 200), { state: 'running', attempts: 1 }, 'still running at the bound');
  let closed = false;
  const closing = q.close(30_000).then(() => {
    closed = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(closed, false, 'close waits for the running job');
  gate.resolve('finished during close');
  await closing;
  const reader = replica(t, { prefix, work: false, processor: async () => 'unused' });
  t.match(await reader.state('slow'), { state: 'ready', result: 'finished during close' });
});

t.test('a job still running at the close deadline goes back to the queue and another replica runs it', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const inside = deferred<AbortSignal>();
  const first = replica(t, {
    prefix,
    processor: (_data, { signal }) => {
      inside.resolve(signal);
      return new Promise<string>(() => {}); // ignores its signal
    },
  });
  await first.add('handed-over', 'd');
  const signal = await inside.promise;
  await first.close(100);
  t.equal(signal.aborted, true, 'the processor was told to stop');
  const second = replica(t, { prefix, processor: async (_d, { attempt }) => `second replica, attempt ${attempt}` });
  t.match(await settle(second, 'handed-over', 30_000), { state: 'ready', result: 'second replica, attempt 2' });
});

t.test('a replica killed inside a job has its job finished by another after stalled detection', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const lockMs = 1000;
  const child = typescript('test/support/jobs-replica.ts', REDIS_URL, prefix, String(lockMs));
  t.teardown(() => child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout });
  const seen = (what: string) =>
    new Promise<void>((resolve) => {
      lines.on('line', (line) => {
        if (line === what) resolve();
      });
    });
  const ready = seen('ready');
  const inside = seen('inside orphan');
  await ready;
  const producer = replica(t, { prefix, work: false, processor: async () => 'unused' });
  await producer.add('orphan', 'd');
  await inside;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  t.match(await producer.state('orphan'), { state: 'running' }, 'the dead replica still holds it');

  const events = counting();
  const survivor = replica(t, {
    prefix,
    lockDurationMs: lockMs,
    stalledIntervalMs: lockMs / 2,
    listener: events.listener,
    processor: async (_d, { attempt }) => `taken over, attempt ${attempt}`,
  });
  t.match(await settle(survivor, 'orphan', 60_000), { state: 'ready', result: 'taken over, attempt 2', attempts: 2 });
  t.equal(events.counts.stalled, 1, 'the survivor found it stalled');
  t.equal(events.counts.completed, 1);
});

t.test('with Redis unreachable, add, state and wait reject and close still ends (no call hangs)', async (t) => {
  const child = typescript('test/support/jobs-unreachable.ts', 'redis://127.0.0.1:1');
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  // A bound for a hang only (the file's own timeout would do the same), not a speed claim.
  const hung = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(hung);
  t.equal(code, 0, 'the process finished by itself');
  t.same(JSON.parse(out || '{}'), {
    add: 'rejected: MaxRetriesPerRequestError',
    state: 'rejected: MaxRetriesPerRequestError',
    close: 'resolved',
    reported: true,
  });
});

t.test('a replica that loses a job lock aborts the processor; the job runs again', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const first = deferred<AbortSignal>();
  const q = replica(t, {
    prefix,
    lockDurationMs: 1000,
    stalledIntervalMs: 500,
    processor: (_data, { signal, attempt }) => {
      if (attempt > 1) return Promise.resolve(`attempt ${attempt}`);
      first.resolve(signal);
      return new Promise<string>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    },
  });
  await q.add('lost', 'd');
  const signal = await first.promise;
  const client = new Redis(REDIS_URL);
  t.equal(await client.del(`${prefix}:jobs:${bullJobId('lost')}:lock`), 1, 'the lock is taken away');
  await client.quit();
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  t.pass('the processor was told to stop at the next renewal');
  t.match(await settle(q, 'lost', 30_000), { state: 'ready', result: 'attempt 2' }, 'the stalled check gave the job back');
});

t.test('a replica runs at most `concurrency` jobs at once', { skip }, async (t) => {
  const prefix = prefixFor(t);
  let running = 0;
  let most = 0;
  const q = replica(t, {
    prefix,
    concurrency: 2,
    processor: async (data) => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 30));
      running--;
      return data;
    },
  });
  const ids = Array.from({ length: 8 }, (_, i) => `c${i}`);
  await Promise.all(ids.map((id) => q.add(id, id)));
  const states = await Promise.all(ids.map((id) => settle(q, id, 30_000)));
  t.same(
    states.map((s) => s?.state),
    ids.map(() => 'ready'),
  );
  t.equal(most, 2, 'two at a time, never more');
});

t.test(
  'a job given back at close is not run again by the closing replica: it waits in the queue, its processor ran once',
  { skip },
  async (t) => {
    // The race (issue 40's CI): giving a job back wakes the replica's own blocking fetch, which BullMQ
    // does not stop before it moves the job to active again. The second run must hand it back at once.
    for (let round = 0; round < 10; round++) {
      const prefix = prefixFor(t);
      const inside = deferred<void>();
      let runs = 0;
      const q = new BullJobQueue<string, string>({
        url: REDIS_URL,
        concurrency: 2,
        ttlSeconds: 60,
        prefix,
        processor: (_data, { signal }) => {
          runs++;
          inside.resolve();
          return new Promise<string>((_, reject) => {
            if (signal.aborted) reject(signal.reason);
            signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          });
        },
      });
      await q.add('given-back', 'd');
      await inside.promise;
      await q.close(0);
      const client = new Redis(REDIS_URL);
      const where = {
        wait: await client.llen(`${prefix}:jobs:wait`),
        active: await client.llen(`${prefix}:jobs:active`),
        delayed: await client.zcard(`${prefix}:jobs:delayed`),
      };
      await client.quit();
      t.same({ runs, ...where }, { runs: 1, wait: 1, active: 0, delayed: 0 }, `round ${round}: back in wait, run once`);
    }
  },
);
