import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { BullJobQueue } from '../../src/jobs/bullmq.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';

const skip = hasRedisServer ? false : 'redis-server is not installed';

/**
 * `fn` until it resolves, or the deadline: a hang detector (a minute), not a speed limit. Each
 * failure is kept; the last one is thrown past the deadline.
 */
async function eventually<T>(fn: () => Promise<T>, deadlineMs = 60_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() > end) throw error;
      await sleep(100);
    }
  }
}

/**
 * Issue 39 #7: a queue whose Redis did not answer while its connection was set up (BullMQ loads
 * its scripts and reads Redis's version once) failed every call after, forever, even once Redis
 * answered again. Redis is paused (SIGSTOP) before the queue is made and until its setup has
 * failed (a first `add` rejects), then resumed: `add`, `state` and `ping` work again.
 */
t.test('a queue that could not set up its connection at boot recovers once Redis answers', { skip }, async (t) => {
  const redis = await ownRedis(t);
  redis.pause();
  t.teardown(() => redis.resume());
  const queue = new BullJobQueue<string, string>({
    url: redis.url,
    concurrency: 1,
    ttlSeconds: 60,
    commandTimeoutMs: 200,
    callTimeoutMs: 1000,
    processor: async (data) => `done: ${data}`,
    onError: () => {},
  });
  t.teardown(() => queue.close(1000));
  await t.rejects(queue.add('first', 'a'), 'Redis paused: the add fails, within its bound');
  await t.rejects(queue.ping(), 'and the queue says it cannot take jobs');
  redis.resume();
  const state = await eventually(() => queue.add('second', 'b'));
  t.ok(['started', 'running', 'ready'].includes(state.state), `added once Redis answers (${state.state})`);
  await eventually(() => queue.ping());
  const done = await eventually(async () => {
    const s = await queue.state('second');
    if (s?.state !== 'ready') throw new Error(`not ready yet: ${s?.state}`);
    return s;
  });
  t.equal(done.result, 'done: b', 'and its job ran');
});
