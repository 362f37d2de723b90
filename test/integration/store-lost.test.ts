/**
 * The SQLite file deleted or replaced under the running service: SQLite would go on writing into
 * the unlinked file, and a restart would find none of it (nor the installation secret). Readiness
 * must say so and writes must be refused (503, retry elsewhere) rather than lost; reads of what the
 * open file holds go on. On the main thread and on a worker thread (its own connection), including
 * a worker that opens the store only after the file is gone.
 */
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { openStore } from '../../src/store/index.js';
import { build } from '../support/app.js';

const tool = (id: string, text: string) => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: `{"command":"${id}"}` } }],
  },
  { role: 'tool', tool_call_id: id, content: text },
];
const history = (label: string) => [
  { role: 'user', content: `task ${label}` },
  ...tool(`${label}1`, `${label} ${'output line\n'.repeat(400)}`),
  ...tool(`${label}2`, 'the newest result, kept'),
];

/** Readiness is cached for 1.5 s: wait it out so the next check probes the store. */
const pastCache = () => new Promise((resolve) => setTimeout(resolve, 1600));

function compact(app: FastifyInstance, label: string) {
  return app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { messages: history(label), keep_tool_uses: 1, min_tokens: 10, store: 'server' },
  });
}

/** An app on a SQLite file of its own; returns the app and the file. */
async function appOnFile(t: Test, overrides: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-lost-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'store.db');
  const app = await build(t, { COMPACTOR_STORE_URL: `sqlite:${file}`, ...overrides });
  return { app, file, dir };
}

async function expectRefused(t: Test, app: FastifyInstance, label: string) {
  await pastCache();
  const ready = await app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(ready.statusCode, 503, 'readiness is off');
  t.equal(ready.json().status, 'store_unavailable');
  t.match(ready.json().reason, /^the sqlite store lost its database file \(deleted or replaced while the service ran\)/);
  t.notMatch(ready.json().reason, /store\.db|compactor-lost/, 'the reason names no path');
  const res = await compact(app, label);
  t.equal(res.statusCode, 503, 'a write is refused, not lost');
  t.equal(res.json().code, 'CMP_ERR_STORE_UNAVAILABLE');
  t.match(res.json().detail, /lost its database file .*until the service is restarted/);
  t.equal(res.headers['retry-after'], '30');
  const window = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: { messages: history(label), keep: { messages: 2 } },
  });
  t.equal(window.statusCode, 200, 'what needs no store goes on');
}

t.test('main thread: the file deleted under the running service', async (t) => {
  const { app, file } = await appOnFile(t, { COMPACTOR_WORKERS: '0' });
  const first = await compact(app, 'alpha');
  t.equal(first.statusCode, 200);
  const id = first.json().artifacts[0].id as string;
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200);
  rmSync(file);
  await expectRefused(t, app, 'beta');
  const read = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
  t.equal(read.statusCode, 200, 'what the open file holds is still read');
});

t.test('main thread: the file replaced by another under the running service', async (t) => {
  const { app, file, dir } = await appOnFile(t, { COMPACTOR_WORKERS: '0' });
  t.equal((await compact(app, 'alpha')).statusCode, 200);
  const other = join(dir, 'other.db');
  writeFileSync(other, '');
  renameSync(other, file);
  await expectRefused(t, app, 'beta');
});

t.test('worker thread: its own connection refuses too', async (t) => {
  const { app, file } = await appOnFile(t, { COMPACTOR_WORKER_MIN_BYTES: '1' });
  t.equal((await compact(app, 'alpha')).statusCode, 200, 'the worker opened the file');
  rmSync(file);
  await expectRefused(t, app, 'beta');
});

t.test('worker thread opened after the file is gone: no new empty file, writes refused', async (t) => {
  const { app, file } = await appOnFile(t, { COMPACTOR_WORKER_MIN_BYTES: '1' });
  rmSync(file);
  await expectRefused(t, app, 'alpha');
  t.notOk(existsSync(file), 'the worker made no new, empty file in its place');
});

t.test('the store itself: writes and probes refused, reads go on, the secret kept', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-lost-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'store.db');
  const store = await openStore(`sqlite:${file}`);
  t.teardown(() => store.close());
  const secret = await store.secret('first');
  const a = { id: 'art_000000000000000000000001', kind: 'tool_result', tool_name: 'bash', content: '"x"', sha256: 'x' };
  await store.put('s', [a], 60, Date.now());
  rmSync(file);
  await t.rejects(store.probe(Date.now()), { name: 'StoreUnavailableError', problem: /^lost its database file/ });
  await t.rejects(store.put('s', [{ ...a, id: 'art_000000000000000000000002' }], 60, Date.now()), {
    name: 'StoreUnavailableError',
  });
  t.equal(await store.secret('second'), secret, 'the secret already held is still read');
  t.equal((await store.get('s', [a.id], Date.now(), { ttlSeconds: 60 })).size, 1, 'a read is answered');
  const missing = await openStore(`sqlite:${file}`, { mustExist: true });
  t.teardown(() => missing.close());
  await t.rejects(missing.put('s', [a], 60, Date.now()), { name: 'StoreUnavailableError' }, 'a must-exist file that is gone');
  await t.rejects(missing.secret('third'), { name: 'StoreUnavailableError' });
});
