import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { fakeLlm, testConfig } from '../support/app.js';
import type { FakeOpenAI } from '../support/fake-openai.js';
import { conversation, fit, fitBody, SYSTEM, settled } from '../support/prepared.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/**
 * Prepared summaries across replicas: two app instances sharing one Redis (the artifact store,
 * the BullMQ jobs and each key's index of prepared ranges) and one fake OpenAI-compatible
 * summarizer. What replica A prepares, replica B splices; a job's state reads the same on both;
 * usage is billed once across them; keys stay apart. Each test has key prefixes of its own.
 */

const redis = await redisAvailable();
const skip = redis ? false : `no Redis answers at ${REDIS_URL}`;
if (!redis) console.log(`# skipping the prepared-summaries-on-Redis tests: ${skip}`);

/** A prefix of its own for one test, every key under it removed at the end. */
function prefixFor(t: Test): string {
  const prefix = `compactor-test-prep-${randomUUID().slice(0, 8)}`;
  t.teardown(() => dropPrefix(prefix));
  return prefix;
}

/** One replica: the real app on the shared Redis (store and jobs under `prefix`), summarizing with `server`. */
async function replica(
  t: Test,
  prefix: string,
  server: FakeOpenAI,
  overrides: Partial<Record<keyof Config, string>> = {},
): Promise<FastifyInstance> {
  const store = await openStore(REDIS_URL, { keyPrefix: `${prefix}:store:` });
  const config = testConfig({
    COMPACTOR_STORE_URL: REDIS_URL,
    COMPACTOR_JOBS_PREFIX: prefix,
    OPENAI_BASE_URL: server.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    COMPACTOR_SHUTDOWN_GRACE_MS: '1000',
    ...overrides,
  });
  const app = await buildApp(config, { logger: pino({ level: 'silent' }), store });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  return app;
}

for (const workers of ['0', '1']) {
  t.test(
    `workers=${workers}: what replica A prepares, replica B splices with no summarizer call, billed once across both`,
    { skip },
    async (t) => {
      const prefix = prefixFor(t);
      const server = await fakeLlm(t);
      // workers=1: every request runs on a worker thread, with the context the main thread read.
      const threads = { COMPACTOR_WORKER_MIN_BYTES: workers === '1' ? '1' : '262144' };
      const a = await replica(t, prefix, server, threads);
      const b = await replica(t, prefix, server, threads);
      const first = [SYSTEM, ...conversation(12)];
      const one = await fit(a, fitBody(first));
      t.equal(one.status, 200);
      t.equal(one.json.prepared?.state, 'started', 'A asks for a summary to be prepared');
      const { id, covers } = one.json.prepared;

      const view = await settled(b, id);
      t.equal(view.state, 'ready', "the job's state is read on B");
      t.same(view.covers, covers);
      t.equal(view.usage?.calls, 1, 'made by one summarizer call');
      t.equal(server.requests.length, 1, 'by one replica only');
      t.equal((await settled(a, id)).state, 'ready', 'and on A');

      const second = [...one.json.messages, ...conversation(6, 12)];
      const two = await fit(b, fitBody(second));
      t.equal(two.status, 200);
      t.equal(two.json.applied, true);
      t.same(two.json.prepared, { id, state: 'spliced', covers }, 'B splices what A prepared');
      t.equal(server.requests.length, 1, 'with no summarizer call on the request path');
      t.equal(two.json.usage.prepared?.calls, 1, 'and is billed for it');

      const retry = await fit(a, fitBody(second));
      t.equal(retry.json.prepared?.state, 'spliced', 'A splices it too');
      t.equal(retry.json.usage.calls, 0, 'but it is not billed twice');
      t.equal(server.requests.length, 1);
      for (const app of [a, b]) {
        const res = await app.inject({ method: 'GET', url: `/v1/prepared/${id}` });
        t.equal(res.json().state, 'spliced', 'every replica sees it spliced');
      }
    },
  );
}

t.test('a call on replica B waiting for the summary replica A makes is told by pub/sub, no polling', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  server.fallback = (req) => ({ delayMs: 1500, content: `## Goal\nSummary of ${req.messages.length} messages.` });
  const a = await replica(t, prefix, server);
  const first = [SYSTEM, ...conversation(12)];
  const one = await fit(a, fitBody(first));
  const { id, covers } = one.json.prepared;
  // A's worker has taken the job (B, started now, cannot): its end reaches B over Redis.
  for (let i = 0; i < 200; i++) {
    const view = (await a.inject({ method: 'GET', url: `/v1/prepared/${id}` })).json();
    if (view.state === 'running') break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const b = await replica(t, prefix, server);
  let reads = 0;
  const get = b.store.get.bind(b.store);
  b.store.get = (scope, ids, ...rest) => {
    if (ids.includes(id)) reads++;
    return get(scope, ids, ...rest);
  };
  const second = [...one.json.messages, ...conversation(6, 12)];
  const two = await fit(b, fitBody(second, { prepare: { enabled: true, at: { tokens: 1500 }, wait_ms: 30_000 } }));
  t.same(two.json.prepared, { id, state: 'spliced', covers }, "B waited for A's summary and spliced it in");
  t.equal(server.requests.length, 1, 'one summarizer call in all');
  t.ok(reads <= 2, `the summary read once it was ready, not polled for (${reads} reads)`);
});

t.test('concurrent fits on two replicas splicing one ready summary bill it once', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  const threads = { COMPACTOR_WORKER_MIN_BYTES: '1' };
  const a = await replica(t, prefix, server, threads);
  const b = await replica(t, prefix, server, threads);
  const one = await fit(a, fitBody([SYSTEM, ...conversation(12)]));
  t.equal((await settled(a, one.json.prepared.id)).state, 'ready');
  const second = fitBody([...one.json.messages, ...conversation(6, 12)]);
  // All read the index before any reports back: each sees the summary unbilled.
  const splicers = await Promise.all([a, b, a].map((app) => fit(app, second)));
  t.same(
    splicers.map((s) => s.json.prepared?.state),
    ['spliced', 'spliced', 'spliced'],
  );
  const billed = splicers.filter((s) => s.json.usage.prepared?.calls === 1);
  t.equal(billed.length, 1, 'exactly one response bills it');
  for (const other of splicers.filter((s) => s !== billed[0])) {
    t.equal(other.json.usage.total_tokens, 0, 'the others bill nothing');
    const raced = other.json.usage.prepared !== undefined;
    t.equal(other.json.usage.prepared?.total_tokens ?? 0, 0, 'usage.prepared, if reported, is 0');
    t.equal(
      other.json.warnings.some((w: { code: string }) => w.code === 'prepared_already_billed'),
      raced,
      'and says it was billed already',
    );
  }
});

t.test('one job per range, however many replicas ask for it', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  const a = await replica(t, prefix, server);
  const b = await replica(t, prefix, server);
  const body = fitBody([SYSTEM, ...conversation(12)]);
  const [one, two] = await Promise.all([fit(a, body), fit(b, body)]);
  t.equal(one.json.prepared?.id, two.json.prepared?.id, 'the same range');
  t.equal((await settled(a, one.json.prepared.id)).state, 'ready');
  t.equal(server.requests.length, 1, 'summarized once');
});

t.test('keys stay apart across replicas', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  const keys = ['key-a-0123456789ab', 'key-b-0123456789ab'];
  const a = await replica(t, prefix, server, { COMPACTOR_API_KEYS: keys.join(',') });
  const b = await replica(t, prefix, server, { COMPACTOR_API_KEYS: keys.join(',') });
  const first = [SYSTEM, ...conversation(12)];
  const one = await fit(a, fitBody(first), keys[0]);
  const { id } = one.json.prepared;
  t.equal((await settled(b, id, keys[0])).state, 'ready', 'the same key reads it on B');
  const other = await b.inject({ method: 'GET', url: `/v1/prepared/${id}`, headers: { authorization: `Bearer ${keys[1]}` } });
  t.equal(other.statusCode, 404, 'another key cannot');
  t.equal(other.json().code, 'CMP_ERR_PREPARED_NOT_FOUND');
  const two = await fit(b, fitBody([...first, ...conversation(6, 12)]), keys[1]);
  t.not(two.json.prepared?.state, 'spliced', "another key's history does not splice it");
  t.equal(server.requests.length, 2, 'it was summarized for that key');
});

t.test('a job whose attempts all failed reads as failed on every replica, with its error code', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  // The job's two attempts (BullMQ retries after a backoff), one summarizer call each.
  server.enqueue({ fault: 'status', status: 400 });
  server.enqueue({ fault: 'status', status: 400 });
  const a = await replica(t, prefix, server, { COMPACTOR_SUMMARIZER_MAX_RETRIES: '0' });
  const b = await replica(t, prefix, server, { COMPACTOR_SUMMARIZER_MAX_RETRIES: '0' });
  const one = await fit(a, fitBody([SYSTEM, ...conversation(12)]));
  const view = await settled(b, one.json.prepared.id);
  t.equal(view.state, 'failed');
  t.match(view.error, /^CMP_ERR_/);
  t.equal(server.requests.length, 2, 'after its retry');
  t.equal((await settled(a, one.json.prepared.id)).state, 'failed');
});

t.test('a replica closed mid-job gives its job back: another replica finishes it', { skip }, async (t) => {
  const prefix = prefixFor(t);
  const server = await fakeLlm(t);
  // A's summarizer call is slow: A is inside the job when it closes (its grace is 300 ms).
  server.enqueue({ delayMs: 8000 });
  const a = await replica(t, prefix, server, { COMPACTOR_SHUTDOWN_GRACE_MS: '300' });
  const one = await fit(a, fitBody([SYSTEM, ...conversation(12)]));
  const { id } = one.json.prepared;
  const until = Date.now() + 30_000;
  while (server.requests.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(server.requests.length, 1, 'A runs the job');
  const b = await replica(t, prefix, server);
  await a.close();
  const view = await settled(b, id);
  t.equal(view.state, 'ready', 'B finished it');
  t.equal(server.requests.length, 2, 'with a summarizer call of its own');
  const second = await fit(b, fitBody([...one.json.messages, ...conversation(6, 12)]));
  t.equal(second.json.prepared?.state, 'spliced', 'and splices it');
});

t.test('with Redis unreachable, fit still answers and GET /v1/prepared is a 503', async (t) => {
  const child = spawn(process.execPath, [...process.execArgv, 'test/support/prepared-unreachable.ts', 'redis://127.0.0.1:1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  // A bound for a hang only, not a speed claim.
  const hung = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(hung);
  t.equal(code, 0, 'the process finished by itself');
  t.same(
    JSON.parse(out || '{}'),
    { fit: 200, prepared: null, warned: true, view: 503, code: 'CMP_ERR_STORE_UNAVAILABLE' },
    'fit goes on without prepared summaries, claims none, and says so (prepared_unavailable)',
  );
});
