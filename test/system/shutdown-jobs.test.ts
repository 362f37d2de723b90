import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import t, { type Test } from 'tap';
import { fakeLlm } from '../support/app.js';
import type { FakeOpenAI } from '../support/fake-openai.js';
import { freePort } from '../support/net.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';
import { conversation, fitBody, SYSTEM } from '../support/prepared.js';

/**
 * SIGTERM while a prepared summary's job runs, with no request in flight: a background job is not
 * a request. The process (`node dist/server.js`, built by `npm run test:system`) hands the job
 * back (Redis: moved back to wait, for another replica) or drops it (embedded), and exits 0.
 * No timing is asserted: the summarizer holds the job far longer than the grace period.
 */

const root = new URL('../../', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function start(t: Test, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
      COMPACTOR_SHUTDOWN_GRACE_MS: '3000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => out };
}

async function waitReady(port: number): Promise<void> {
  // A bound for a hang only (a busy machine boots slowly), not a speed claim.
  for (let i = 0; i < 1200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error('the server did not become ready');
}

/** Starts a prepared job whose summarizer call outlasts the grace period, waits until it is inside it, sends SIGTERM. */
async function sigtermInsideJob(t: Test, server: FakeOpenAI, env: Record<string, string>) {
  const port = await freePort();
  const { child, output } = start(t, {
    ...env,
    PORT: String(port),
    OPENAI_BASE_URL: server.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
  });
  const exited = once(child, 'exit');
  await waitReady(port);
  server.enqueue({ delayMs: 20_000 });
  const res = await fetch(`http://127.0.0.1:${port}/v1/fit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fitBody([SYSTEM, ...conversation(12)])),
  });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { prepared?: { state: string } }).prepared?.state, 'started', 'a summary is being prepared');
  for (let i = 0; i < 1200 && server.requests.length === 0; i++) await sleep(100);
  t.equal(server.requests.length, 1, 'the job is inside its summarizer call, no request in flight');
  child.kill('SIGTERM');
  const [code] = await exited;
  t.equal(code, 0, 'exit 0: a background job does not hold the shutdown', { output: output().slice(-2000) });
  t.notMatch(output(), /requests in flight/, 'nothing claims a request was in flight');
  return output;
}

t.test('embedded: SIGTERM with a prepared job running drops it and exits 0', async (t) => {
  const server = await fakeLlm(t);
  await sigtermInsideJob(t, server, { COMPACTOR_STORE_URL: 'memory:' });
});

t.test(
  'Redis: SIGTERM with a prepared job running hands it back and exits 0',
  { skip: hasRedisServer ? false : 'redis-server is not installed' },
  async (t) => {
    const redis = await ownRedis(t);
    const server = await fakeLlm(t);
    await sigtermInsideJob(t, server, { COMPACTOR_STORE_URL: redis.url });
    const client = redis.client();
    t.equal(await client.llen('compactor:prepared:wait'), 1, 'the job is back in the queue, for another replica');
    t.equal(await client.llen('compactor:prepared:active'), 0, 'and not left active');
  },
);
