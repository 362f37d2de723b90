/**
 * The store's size cap (`COMPACTOR_STORE_MAX_BYTES`): oldest-first eviction by creation time in
 * SQLite and memory, a running total that survives a restart, the cap holding under many puts,
 * originals larger than the cap refused whole, and an evicted artifact reported exactly as an
 * expired one is, with the evictions counted in the metrics.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t, { type Test } from 'tap';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore, NewArtifact } from '../../src/store/types.js';
import { build } from '../support/app.js';

/** An artifact whose content is exactly `bytes` bytes of JSON. */
function sized(name: string, bytes: number): NewArtifact {
  const content = JSON.stringify(name.padEnd(bytes - 2, '.'));
  return { id: `art_${name.padStart(24, '0')}`, kind: 'tool_result', tool_name: 'bash', content, sha256: 'x' };
}

const T0 = 1_800_000_000_000;
const DAY = 24 * 3600;

async function held(store: ArtifactStore, names: string[], now: number): Promise<string[]> {
  const found = await store.get(
    's',
    names.map((n) => sized(n, 3).id),
    now,
  );
  return names.filter((n) => found.has(sized(n, 3).id));
}

/** The same expectations for every capped store. */
async function evictionOrder(t: Test, store: ArtifactStore): Promise<void> {
  await store.put('s', [sized('a', 1000)], DAY, T0 + 1);
  await store.put('s', [sized('b', 1000)], DAY, T0 + 2);
  await store.put('s', [sized('c', 1000)], DAY, T0 + 3);
  t.same(store.usage(), { bytes: 3000, maxBytes: 3000, evicted: 0 }, 'at the cap, nothing evicted');
  await store.put('s', [sized('a', 1000)], DAY, T0 + 4);
  t.equal(store.usage()?.bytes, 3000, 'storing a again keeps one copy');
  await store.put('s', [sized('d', 1000)], DAY, T0 + 5);
  t.same(
    await held(store, ['a', 'b', 'c', 'd'], T0 + 6),
    ['b', 'c', 'd'],
    'a goes first: oldest by creation, though stored again since',
  );
  await store.put('s', [sized('e', 2000)], DAY, T0 + 7);
  t.same(await held(store, ['b', 'c', 'd', 'e'], T0 + 8), ['d', 'e'], 'then as many of the oldest as it takes');
  t.same(store.usage(), { bytes: 3000, maxBytes: 3000, evicted: 3 });

  await t.rejects(store.put('s', [sized('f', 2000), sized('g', 1500)], DAY, T0 + 9), {
    name: 'StoreCapacityError',
    bytes: 3500,
    maxBytes: 3000,
  });
  await t.rejects(store.put('s', [sized('h', 3001)], DAY, T0 + 9), { name: 'StoreCapacityError' }, 'one artifact over the cap');
  t.same(
    await held(store, ['d', 'e', 'f', 'g', 'h'], T0 + 10),
    ['d', 'e'],
    'a refused batch is refused whole: nothing stored, nothing evicted',
  );

  await store.put('s', [sized('d', 1000), sized('i', 2000)], DAY, T0 + 11);
  t.same(
    await held(store, ['d', 'e', 'i'], T0 + 12),
    ['d', 'i'],
    "a put's own artifacts are spared, the oldest among them included",
  );

  await store.put('s', [sized('l', 1000)], 1, T0 + 12);
  await store.put('s', [sized('m', 2000)], DAY, T0 + 13);
  t.same(await held(store, ['d', 'i', 'l', 'm'], T0 + 14), ['l', 'm']);
  t.equal(store.usage()?.evicted, 6);
  await store.put('s', [sized('n', 1000)], DAY, T0 + 5000);
  t.same(await held(store, ['l', 'm', 'n'], T0 + 5001), ['m', 'n']);
  t.same(
    store.usage(),
    { bytes: 3000, maxBytes: 3000, evicted: 6 },
    'an expired artifact removed on the way is not counted as evicted',
  );
}

t.test('memory store: eviction order', async (t) => {
  const store = await openStore('memory:', { maxBytes: 3000 });
  t.teardown(() => store.close());
  await evictionOrder(t, store);
});

t.test('sqlite store: eviction order', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(`sqlite:${join(dir, 'cap.db')}`, { maxBytes: 3000 });
  t.teardown(() => store.close());
  await evictionOrder(t, store);
});

t.test('sqlite: the running total survives a restart, and a lower cap holds from the start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = `sqlite:${join(dir, 'cap.db')}`;
  const first = await openStore(url, { maxBytes: 10_000 });
  for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) await first.put('s', [sized(name, 2000)], DAY, T0 + i);
  await first.close();
  const second = await openStore(url, { maxBytes: 10_000 });
  t.same(second.usage(), { bytes: 8000, maxBytes: 10_000, evicted: 0 }, 'the total, read back, not recounted');
  await second.put('s', [sized('e', 3000)], DAY, T0 + 10);
  t.same(
    await held(second, ['a', 'b', 'c', 'd', 'e'], T0 + 11),
    ['b', 'c', 'd', 'e'],
    'and the cap applies to what the first run stored',
  );
  await second.close();
  const third = await openStore(url, { maxBytes: 5000 });
  t.teardown(() => third.close());
  t.same(third.usage(), { bytes: 5000, maxBytes: 5000, evicted: 2 }, 'a cap lowered between runs evicts at open');
  t.same(await held(third, ['b', 'c', 'd', 'e'], T0 + 12), ['d', 'e']);
});

t.test('sqlite: a file of the first scoped layout is migrated, its total counted once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'old.db');
  const db = new Database(file);
  db.exec(`CREATE TABLE scoped_artifacts (scope TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, tool_name TEXT,
    content TEXT NOT NULL, sha256 TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    PRIMARY KEY (scope, id)) WITHOUT ROWID;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    INSERT INTO meta VALUES ('secret', 'kept-secret')`);
  const insert = db.prepare('INSERT INTO scoped_artifacts VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  for (const [i, name] of ['a', 'b'].entries()) {
    const a = sized(name, 1500);
    insert.run('s', a.id, a.kind, a.tool_name, a.content, a.sha256, T0 + i, T0 + DAY * 1000);
  }
  const unicode = { ...sized('u', 10), content: JSON.stringify('é日本') };
  insert.run('s', unicode.id, 'k', null, unicode.content, 'x', T0 + 2, T0 + DAY * 1000);
  db.close();
  const store = await openStore(`sqlite:${file}`, { maxBytes: 4000 });
  t.teardown(() => store.close());
  t.equal(store.usage()?.bytes, 3000 + Buffer.byteLength(unicode.content), 'content bytes, UTF-8');
  t.equal(await store.secret('new'), 'kept-secret', 'the installation secret is kept');
  t.equal((await store.get('s', [unicode.id], T0)).get(unicode.id)?.content, unicode.content, 'rows survive, byte-exact');
  await store.put('s', [sized('c', 1500)], DAY, T0 + 3);
  t.same(await held(store, ['a', 'b', 'c'], T0 + 4), ['b', 'c'], 'migrated rows are evicted by their creation time');
});

t.test('sqlite: the cap holds under many puts of mixed sizes, and so does the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cap.db');
  const cap = 2 * 1024 * 1024;
  const store = await openStore(`sqlite:${file}`, { maxBytes: cap });
  t.teardown(() => store.close());
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let over = 0;
  let stored = 0;
  for (let i = 0; i < 400; i++) {
    const bytes = Math.floor(1024 * 2 ** (random() * 8)); // 1 KB to 256 KB
    stored += bytes;
    await store.put('s', [sized(`m${i}`, bytes)], DAY, T0 + i);
    if ((store.usage()?.bytes ?? 0) > cap) over++;
  }
  t.equal(over, 0, `never over the cap (${Math.round(stored / 1024 / 1024)} MB stored in all)`);
  t.ok((store.usage()?.evicted ?? 0) > 300, 'the oldest made room');
  const size = statSync(file).size;
  t.ok(size < cap * 1.3, `the file stays near the cap: freed pages are reused (${size} bytes for a ${cap}-byte cap)`);
});

const tool = (id: string, text: string) => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: `{"command":"${id}"}` } }],
  },
  { role: 'tool', tool_call_id: id, content: text },
];
const history = (label: string, kb: number) => [
  { role: 'user', content: `task ${label}` },
  ...tool(`${label}1`, `${label} ${'x'.repeat(kb * 1024)}`),
  ...tool(`${label}2`, 'the newest result, kept'),
];

t.test('through the service: an evicted artifact is missing like an expired one; too large is a 507', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_STORE_MAX_BYTES: String(12 * 1024) });
  const compact = (messages: unknown[], store = 'server') =>
    app.inject({ method: 'POST', url: '/v1/compact', payload: { messages, keep_tool_uses: 1, min_tokens: 10, store } });
  const first = await compact(history('alpha', 8));
  t.equal(first.statusCode, 200);
  const id = first.json().artifacts[0].id as string;
  t.equal((await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` })).statusCode, 200);
  t.equal((await compact(history('beta', 8))).statusCode, 200, 'the second offload takes the room of the first');

  const gone = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
  t.equal(gone.statusCode, 404);
  t.equal(gone.json().code, 'CMP_ERR_ARTIFACT_NOT_FOUND', 'evicted: as unknown or expired');
  const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: first.json().messages } });
  t.equal(expanded.statusCode, 200);
  t.same(expanded.json().missing, [id], 'expand reports it missing');

  const metrics = await (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /^compactor_artifacts_evicted_total 1$/m, 'the eviction is counted');
  t.match(metrics, /^compactor_store_bytes [1-9]\d*$/m, 'and the bytes held shown');

  const huge = await compact(history('gamma', 20));
  t.equal(huge.statusCode, 507);
  t.equal(huge.json().code, 'CMP_ERR_STORE_ARTIFACT_TOO_LARGE');
  t.match(huge.json().detail, /more than the memory store's cap of 12288 bytes \(COMPACTOR_STORE_MAX_BYTES\)/);
  t.equal(huge.headers['retry-after'], undefined, 'retrying would not help');
  t.equal((await compact(history('gamma', 20), 'inline')).statusCode, 200, 'inline needs no room in the store');
  const expandedAgain = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: first.json().messages } });
  t.same(expandedAgain.json().missing, [id]);
});
