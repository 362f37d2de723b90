import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import { fakeLlm } from '../support/app.js';
import { type FakeOpenAI, gate } from '../support/fake-openai.js';
import { freePort } from '../support/net.js';
import { conversation, fitBody, SYSTEM } from '../support/prepared.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/**
 * A prepared summary's job survives the death of the replica running it (issue 22): real
 * processes (`node dist/server.js`, built by `npm run test:system`) sharing the test Redis (the
 * artifacts under `COMPACTOR_STORE_PREFIX`, the jobs and each key's index under
 * `COMPACTOR_JOBS_PREFIX`, both of this test's own) and one fake summarizer. A replica is killed
 * with SIGKILL inside the job's summarizer call (nothing of its close runs: its lock must expire,
 * `COMPACTOR_JOBS_LOCK_MS` 2 s here); the surviving replica, or the same one started again, finishes
 * the job, and the next fit splices it, billed once. No timing is asserted: every wait polls
 * until a generous bound.
 */

const redis = await redisAvailable();
const skip = redis ? false : `no Redis answers at ${REDIS_URL}`;
if (!redis) console.log(`# skipping the prepared-summary takeover tests: ${skip}`);

const root = new URL('../../', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Replica {
  base: string;
  child: ChildProcess;
  kill(): Promise<void>;
}

/** One replica process on the shared Redis under `prefix`, summarizing with `server`; ready when it returns. */
async function replica(t: Test, prefix: string, server: FakeOpenAI): Promise<Replica> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: REDIS_URL,
      COMPACTOR_STORE_PREFIX: `${prefix}.store`,
      COMPACTOR_JOBS_PREFIX: prefix,
      COMPACTOR_JOBS_LOCK_MS: '2000',
      COMPACTOR_ARTIFACT_SECRET: 'takeover-test-secret-shared-by-both-replicas',
      OPENAI_BASE_URL: server.url,
      COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  t.teardown(kill);
  const base = `http://127.0.0.1:${port}`;
  // A bound for a hang only (a busy machine boots slowly), not a speed claim.
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`the replica exited with ${child.exitCode}: ${stderr}`);
    const ok = await fetch(`${base}/health/ready`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return { base, child, kill };
    await sleep(100);
  }
  throw new Error(`the replica did not become ready: ${stderr}`);
}

/** What these tests read of a fit response and of `GET /v1/prepared/{id}`. */
interface FitAnswer {
  messages: unknown[];
  prepared?: { id: string; state: string };
  usage?: { calls: number; prepared?: { calls: number } };
}
interface View {
  state: string;
  usage?: { calls: number } | null;
}

async function fit(r: Replica, body: unknown): Promise<{ status: number; json: FitAnswer }> {
  const res = await fetch(`${r.base}/v1/fit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as FitAnswer };
}

const view = async (r: Replica, id: string) => (await (await fetch(`${r.base}/v1/prepared/${id}`)).json()) as View;

/** Polls until `done` holds, for at most two minutes (a hang detector, not a timing claim). */
async function until<T>(what: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const value = await what();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(50);
  }
}

/** A counter of the replica's /metrics, by its `event` label. */
async function prepared(r: Replica, event: string): Promise<number> {
  const text = await (await fetch(`${r.base}/metrics`)).text();
  const m = new RegExp(`^compactor_prepared_total\\{event="${event}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/**
 * Starts a job on `a` with a summarizer call that is slow to answer, waits until `a` is inside
 * that call, then (after `before`) kills `a`. Returns the first response and the job's id.
 */
async function killInsideJob(t: Test, a: Replica, server: FakeOpenAI, before: () => Promise<void> = async () => {}) {
  // Held until the replica is dead (however slowly the second one boots on a busy machine): the
  // reply never reaches the dead replica, and the replica never finishes the job itself.
  const held = gate(t);
  server.enqueue({ until: held.until });
  const first = [SYSTEM, ...conversation(12)];
  const one = await fit(a, fitBody(first));
  t.equal(one.status, 200);
  t.equal(one.json.prepared?.state, 'started', 'the first call asks for a summary to be prepared');
  await until(
    async () => server.requests.length,
    (n) => n > 0,
  );
  t.equal(server.requests.length, 1, 'the replica that will die is inside the summarizer call');
  const id = one.json.prepared?.id ?? '';
  t.equal((await view(a, id)).state, 'running');
  await before();
  await a.kill();
  held.open();
  return { one, id };
}

/** The job finished by `b`: ready with one call's usage, then spliced by the next fit, billed once. */
async function finishedBy(t: Test, b: Replica, server: FakeOpenAI, one: { json: FitAnswer }, id: string) {
  const ready = await until(
    () => view(b, id),
    (v) => v.state === 'ready' || v.state === 'failed',
  );
  t.equal(ready.state, 'ready', 'the job was finished by the other process');
  t.equal(ready.usage?.calls, 1, 'its usage is one summarizer call (the completed one)');
  t.equal(server.requests.length, 2, 'the summarizer was called twice for the range: the dead attempt, the finished one');
  t.same(server.requests[1]?.messages, server.requests[0]?.messages, 'both for the same range and prompt');
  t.equal(await prepared(b, 'prepared'), 1, 'the survivor counts the summary it made');

  const two = await fit(b, fitBody([...one.json.messages, ...conversation(6, 12)]));
  t.equal(two.status, 200);
  t.equal(two.json.prepared?.id, id);
  t.equal(two.json.prepared?.state, 'spliced', 'the next fit splices it');
  t.equal(two.json.usage?.prepared?.calls, 1, 'billed as one summarizer call');
  t.equal(two.json.usage?.calls, 1, 'and nothing else');
  t.equal(server.requests.length, 2, 'with no summarizer call on the request path');
  t.equal((await view(b, id)).state, 'spliced');
  t.equal(await prepared(b, 'spliced'), 1);
}

t.test('a replica killed inside a prepared job: the other replica finishes it, the next fit splices it', { skip }, async (t) => {
  const prefix = `compactor-test-takeover-${randomUUID().slice(0, 8)}`;
  t.teardown(() => dropPrefix(prefix));
  const server = await fakeLlm(t);
  const a = await replica(t, prefix, server);
  let b: Replica | undefined;
  // B starts once A holds the job, so that A runs it; B is running when A dies.
  const { one, id } = await killInsideJob(t, a, server, async () => {
    b = await replica(t, prefix, server);
  });
  if (!b) throw new Error('no second replica');
  await finishedBy(t, b, server, one, id);
  const client = new Redis(REDIS_URL);
  t.teardown(() => client.quit());
  const stored = await client.keys(`${prefix}.store:art:*`);
  t.ok(stored.length > 0, 'the artifacts (the summary cache among them) are under COMPACTOR_STORE_PREFIX');
});

t.test('a job survives a restart: the only replica, killed inside it and started again, finishes it', { skip }, async (t) => {
  const prefix = `compactor-test-takeover-${randomUUID().slice(0, 8)}`;
  t.teardown(() => dropPrefix(prefix));
  const server = await fakeLlm(t);
  const a = await replica(t, prefix, server);
  const { one, id } = await killInsideJob(t, a, server);
  const restarted = await replica(t, prefix, server);
  await finishedBy(t, restarted, server, one, id);
});
