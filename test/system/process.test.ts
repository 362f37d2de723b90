import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadCorpus } from '../support/corpus.js';
import { freePort } from '../support/net.js';

/**
 * The process as the container image runs it: `node dist/server.js` from the built output (the
 * Dockerfile's CMD, with the image's HOST=0.0.0.0), started by `npm test` after `npm run build`.
 */
const root = new URL('../../', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'compactor-process-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

function start(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      LOG_LEVEL: 'info',
      COMPACTOR_STORE_URL: `sqlite:${dataDir}/compactor.db`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { child, output: () => text };
}

/** Polls readiness until a deadline generous enough for a slow or busy machine (a hang detector). */
async function waitReady(port: number): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}

t.test('the image start command serves /health/ready, and SIGTERM drains in-flight requests', async (t) => {
  const port = await freePort();
  const { child, output } = start({ PORT: String(port) });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await waitReady(port);
  const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
  t.same(await ready.json(), { status: 'ready' });

  const largest = loadCorpus().at(-1);
  if (!largest) throw new Error('empty corpus');
  const inFlight = fetch(`http://127.0.0.1:${port}/v1/window`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: largest.messages, keep: { messages: 10 } }),
  });
  // SIGTERM once the server has logged the request's arrival: it is then in flight for sure.
  // Up to 120 s: a loaded CI machine can be slow to send and log a 1 MB body.
  const arrived = () => /"url":"\/v1\/window"/.test(output());
  for (let i = 0; i < 24_000 && !arrived(); i++) await new Promise((r) => setTimeout(r, 5));
  t.ok(arrived(), 'the request arrived before SIGTERM');
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const res = await inFlight;
  t.equal(res.status, 200, 'the request in flight at SIGTERM still completes');
  const body = (await res.json()) as { applied: boolean };
  t.equal(body.applied, true);
  const [code] = await exited;
  t.equal(code, 0, 'exit 0 after draining');
  t.match(output(), /draining/, 'the drain is logged');
  t.notMatch(output(), /pytest|import |def /, 'no message content in the logs');
});

t.test('an invalid variable stops the process at boot, naming it', async (t) => {
  const { child, output } = start({ PORT: 'not-a-port' });
  const [code] = await once(child, 'exit');
  t.equal(code, 78);
  t.match(output(), /PORT="not-a-port"/);
});

t.test('SIGTERM while a compaction writes its originals: it completes, and they survive the restart', async (t) => {
  const port = await freePort();
  // A grace period a loaded machine cannot run out of: this test is about the write, not the clock.
  const first = start({ PORT: String(port), COMPACTOR_SHUTDOWN_GRACE_MS: '60000' });
  t.teardown(() => {
    if (first.child.exitCode === null) first.child.kill('SIGKILL');
  });
  await waitReady(port);
  // 2 MB of tool output: the store write is a real part of the request's time.
  const output = Array.from({ length: 25_000 }, (_, i) => `line ${i}: ${'result '.repeat(10)}`).join('\n');
  const history = [
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"a"}' } }],
    },
    { role: 'tool', tool_call_id: 'a', content: output },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"b"}' } }],
    },
    { role: 'tool', tool_call_id: 'b', content: 'newest' },
  ];
  const inFlight = fetch(`http://127.0.0.1:${port}/v1/compact`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: history, keep_tool_uses: 1 }),
  });
  const arrived = () => /"url":"\/v1\/compact"/.test(first.output());
  for (let i = 0; i < 24_000 && !arrived(); i++) await new Promise((r) => setTimeout(r, 5));
  t.ok(arrived(), 'the request arrived before SIGTERM');
  const exited = once(first.child, 'exit');
  first.child.kill('SIGTERM');
  const res = await inFlight;
  t.equal(res.status, 200, 'the compaction in flight at SIGTERM completes');
  const body = (await res.json()) as { artifacts: { id: string }[] };
  const id = body.artifacts[0]?.id ?? '';
  const [code] = await exited;
  t.equal(code, 0, 'exit 0 after draining');

  const second = start({ PORT: String(port) });
  t.teardown(() => {
    if (second.child.exitCode === null) second.child.kill('SIGKILL');
  });
  await waitReady(port);
  const again = await fetch(`http://127.0.0.1:${port}/v1/artifacts/${id}`);
  t.equal(again.status, 200, 'the original written during the drain is there after the restart');
  t.equal(((await again.json()) as { content: { content: string } }).content.content, output, 'byte-exact');
  const stopped = once(second.child, 'exit');
  second.child.kill('SIGTERM');
  await stopped;
});

t.test('SIGTERM before the worker pool is up: a quiet drain (no error, no stack), exit 0', async (t) => {
  const port = await freePort();
  const { child, output } = start({ PORT: String(port) });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  // As soon as the port answers: the pool starts after listening and takes far longer than this.
  let live = false;
  for (let i = 0; i < 2000 && !live; i++) {
    live = await fetch(`http://127.0.0.1:${port}/health/live`).then(
      (r) => r.ok,
      () => false,
    );
    if (!live) await new Promise((r) => setTimeout(r, 5));
  }
  t.ok(live, 'listening');
  const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = await exited;
  t.equal(code, 0, 'exit 0');
  if (ready.status !== 200) t.match(await ready.json(), { status: 'starting' }, 'not ready while the pool starts');
  t.notMatch(output(), /"level":(50|60)/, 'nothing logged at error level');
  t.notMatch(output(), /did not start|"stack"|FATAL/, 'no stack, no fatal error');
  t.match(output(), /draining/, 'the drain is logged');
});
