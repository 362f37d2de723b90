import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test as TapTest } from 'tap';
import { addresser } from '../../src/history/address.js';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore, NewArtifact } from '../../src/store/types.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

const address = addresser('store-test-secret', 'shared');

function artifact(content: unknown, kind = 'tool_result'): NewArtifact {
  const json = JSON.stringify(content);
  const { id, sha256 } = address(json);
  return { id, kind, tool_name: 'bash', content: json, sha256 };
}

/** The same contract, whichever store: every implementation must pass it. */
async function contract(t: Test, store: ArtifactStore): Promise<void> {
  const now = 1_800_000_000_000;
  const a = artifact({ role: 'tool', tool_call_id: `c-${Math.random()}`, content: 'x'.repeat(1000) });
  const b = artifact({ type: 'tool_result', tool_use_id: `t-${Math.random()}`, content: [{ type: 'text', text: 'é日本' }] });
  const scope = `scope-${Math.random().toString(16).slice(2)}`;
  t.same([...(await store.get(scope, [a.id, b.id], now)).keys()], [], 'unknown ids are absent');
  await store.put(scope, [a, b], 60, now);
  const got = await store.get(scope, [a.id, b.id, 'art_000000000000000000000000'], now + 1000);
  t.equal(got.size, 2, 'both stored, the unknown one absent');
  t.equal(got.get(a.id)?.content, a.content, 'content byte-exact');
  t.same(JSON.parse(got.get(b.id)?.content ?? 'null'), JSON.parse(b.content), 'unicode survives');
  t.equal(got.get(a.id)?.sha256, a.sha256);
  t.equal(got.get(a.id)?.created_at, now);
  // Redis keeps time by its own clock (the key's TTL), so allow the second that passed.
  t.ok(Math.abs((got.get(a.id)?.expires_at ?? 0) - (now + 60_000)) <= 2000, 'expires after the TTL');

  t.equal((await store.get(`${scope}-other`, [a.id, b.id], now + 1000)).size, 0, 'another scope does not see them');
  t.equal((await store.get('shared', [a.id, b.id], now + 1000)).size, 0, 'nor does the shared scope');

  await store.put(scope, [a], 120, now + 10_000);
  const again = (await store.get(scope, [a.id], now + 10_000)).get(a.id);
  t.equal(again?.created_at, now, 'the same original stored twice is one artifact: creation time kept');
  // (Redis: the time between its PEXPIRE and PTTL passes on its clock too; a loaded machine takes ms.)
  t.ok((again?.expires_at ?? 0) >= now + 130_000 - (store.kind === 'redis' ? 2000 : 5), 'and its expiry extended');
  t.ok((again?.expires_at ?? 0) > now + 60_000 + 2000, 'later than the first TTL would have ended, whatever the clock');

  if (store.kind !== 'redis') {
    // Redis expires keys on its own clock; the others are checked against the given time.
    t.equal((await store.get(scope, [b.id], now + 61_000)).size, 0, 'expired artifacts are gone');
  }
  t.equal(await store.ping(), true);
  await t.resolves(store.probe(now), 'a store that takes writes passes the readiness probe');
  t.ok((store.usage()?.bytes ?? 0) > 0, 'the bytes held are counted');
  const kept = await store.secret(`candidate-${Math.random()}`);
  t.equal(await store.secret('another candidate'), kept, 'the installation secret, once stored, stays');
}

type Test = TapTest;

t.test('memory store', async (t) => {
  const store = await openStore('memory:');
  t.teardown(() => store.close());
  await contract(t, store);
});

t.test('sqlite store (file created with its folder on first use)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(`sqlite:${join(dir, 'nested/deeper/store.db')}`);
  t.teardown(() => store.close());
  await contract(t, store);
});

const redis = await redisAvailable();
const noRedis = redis ? false : `no Redis answers at ${REDIS_URL}`;

t.test('redis store', { skip: noRedis }, async (t) => {
  const keyPrefix = `test-store-${process.pid}-${Math.random().toString(16).slice(2)}:`;
  const store = await openStore(REDIS_URL, { keyPrefix });
  t.teardown(async () => {
    await store.close();
    await dropPrefix(keyPrefix);
  });
  await contract(t, store);
  const real = artifact({ role: 'tool', tool_call_id: `ttl-${Math.random()}`, content: 'short-lived' });
  await store.put('shared', [real], 1, Date.now());
  await new Promise((r) => setTimeout(r, 1300));
  t.equal((await store.get('shared', [real.id], Date.now())).size, 0, 'Redis expires artifacts by their TTL');
});

t.test('an unreachable Redis is a StoreUnavailableError, not a hang or a crash', async (t) => {
  const store = await openStore('redis://127.0.0.1:1/0');
  t.teardown(() => store.close());
  await t.rejects(store.get('shared', ['art_000000000000000000000000'], Date.now()), { name: 'StoreUnavailableError' });
  await t.rejects(store.put('shared', [artifact({ x: 1 })], 60, Date.now()), { name: 'StoreUnavailableError' });
  await t.rejects(store.secret('x'), { name: 'StoreUnavailableError' });
  await t.rejects(store.probe(Date.now()), { name: 'StoreUnavailableError', problem: /^cannot be reached/ });
  t.equal(await store.ping(), false);
});

/** Writes artifacts in one process and reads them in another started afterwards. */
function durability(t: Test, url: string, keyPrefix?: string): void {
  const script = (mode: 'write' | 'read') => `
    import { openStore } from './dist/store/index.js';
    const store = await openStore(${JSON.stringify(url)}, ${JSON.stringify(keyPrefix ? { keyPrefix } : {})});
    const a = { id: 'art_0123456789abcdef01234567', kind: 'tool_result', tool_name: 'bash', content: '{"role":"tool","content":"persisted"}', sha256: 'x' };
    if (${JSON.stringify(mode)} === 'write') await store.put('shared', [a], 3600, Date.now());
    else { const got = await store.get('shared', [a.id], Date.now()); process.stdout.write(got.get(a.id)?.content ?? 'missing'); }
    await store.close();
  `;
  const root = new URL('../../', import.meta.url).pathname;
  const run = (mode: 'write' | 'read') =>
    spawnSync(process.execPath, ['--input-type=module', '-e', script(mode)], { cwd: root, encoding: 'utf8' });
  const w = run('write');
  t.equal(w.status, 0, `writer exited cleanly ${w.stderr}`);
  const r = run('read');
  t.equal(r.status, 0, `reader exited cleanly ${r.stderr}`);
  t.equal(r.stdout, '{"role":"tool","content":"persisted"}', 'a second process reads what the first wrote');
}

t.test('durability: sqlite file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  durability(t, `sqlite:${join(dir, 'durable.db')}`);
});

t.test('durability: redis', { skip: noRedis }, async (t) => {
  const keyPrefix = `test-durable-${process.pid}-${Math.random().toString(16).slice(2)}:`;
  t.teardown(() => dropPrefix(keyPrefix));
  durability(t, REDIS_URL, keyPrefix);
});
