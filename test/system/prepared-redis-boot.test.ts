import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { openStore } from '../../src/store/index.js';
import { testConfig } from '../support/app.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';
import { conversation, fitBody, SYSTEM, settled } from '../support/prepared.js';

const skip = hasRedisServer ? false : 'redis-server is not installed';

/** The fields of a fit answer this test reads. */
interface FitAnswer {
  prepared?: { id: string; state: string };
  warnings: { code: string; message: string }[];
}

/** Polls `fn` until it returns a value, or the deadline (a hang detector, not a speed limit). */
async function until<T>(what: string, fn: () => Promise<T | undefined>, deadlineMs = 90_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await sleep(100);
  }
}

/**
 * Issue 39 #7: a replica whose prepared-summary queue could not set up its Redis connection at
 * boot (Redis too slow to answer, "Command timed out") answered every fit with
 * `prepared.state: "started"` and a `prepared_unavailable` "not queued" warning together, 404 then
 * 503 for `GET /v1/prepared/{id}`, and said it was ready, until restarted. Here the queue's Redis is
 * paused (SIGSTOP) from before boot until the queue has logged its setup's failure (the artifacts
 * live in a memory store, so that boot itself does not need Redis), then resumed.
 */
t.test('a replica whose job queue lost Redis at boot is not ready, then recovers with it', { skip }, async (t) => {
  const redis = await ownRedis(t);
  redis.pause();
  t.teardown(() => redis.resume());
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const store = await openStore('memory:');
  const config = testConfig({ COMPACTOR_STORE_URL: redis.url, COMPACTOR_SHUTDOWN_GRACE_MS: '500', LOG_LEVEL: 'warn' });
  const app: FastifyInstance = await buildApp(config, { logger: pino({ level: 'warn' }, sink), store });
  t.teardown(async () => {
    redis.resume();
    await app.close();
    await store.close();
  });
  await app.ready();
  const ready = async () => app.inject({ method: 'GET', url: '/health/ready' });
  const fit = async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/fit', payload: fitBody([SYSTEM, ...conversation(12)]) });
    t.equal(res.statusCode, 200, 'fit answers');
    const answer = res.json() as FitAnswer;
    const unavailable = answer.warnings.some((w) => w.code === 'prepared_unavailable');
    t.notOk(unavailable && answer.prepared?.state === 'started', 'never "started" and "not queued" together');
    return { answer, unavailable };
  };

  // The queue's setup fails while Redis answers nothing (its command timeout): wait for its log line.
  await until('the queue logged its failure', async () =>
    lines.some((l) => l.includes('prepared summaries: Redis error') && l.includes('timed out')) ? true : undefined,
  );
  const notReady = await ready();
  t.equal(notReady.statusCode, 503, 'not ready while prepared summaries cannot be queued');
  t.equal(notReady.json().status, 'prepared_unavailable');
  const during = await fit();
  t.ok(during.unavailable, 'a fit says prepared summaries are unavailable');

  redis.resume();
  await until('ready again', async () => ((await ready()).statusCode === 200 ? true : undefined));
  const queued = await until('a fit queues its prepared summary', async () => {
    const { answer, unavailable } = await fit();
    return !unavailable && answer.prepared ? answer.prepared : undefined;
  });
  t.equal(queued.state, 'started', 'queued: being made');
  const view = await settled(app, queued.id);
  t.equal(view.state, 'ready', 'GET /v1/prepared/{id} follows it to ready');
});
