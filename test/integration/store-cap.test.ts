/**
 * The store's size cap (`COMPACTOR_STORE_MAX_BYTES`): least-recently-used eviction in every store
 * (an offload or a read that is a use refreshes), a running total that survives a restart, the cap holding under many puts,
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
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A read that is a use, as `GET /v1/artifacts/{id}` and `expand` make it. */
const use = (store: ArtifactStore, names: string[], now: number, ttlSeconds = DAY) =>
  store.get(
    's',
    names.map((n) => sized(n, 3).id),
    now,
    { ttlSeconds },
  );

/** The same expectations for every capped store: least recently used first. */
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
    ['a', 'c', 'd'],
    'b goes first: the least recently used; a, stored again since, is kept',
  );
  t.equal((await use(store, ['c'], T0 + 7)).size, 1);
  await store.put('s', [sized('e', 2000)], DAY, T0 + 8);
  t.same(await held(store, ['a', 'c', 'd', 'e'], T0 + 9), ['c', 'e'], 'then as many as it takes; c, read since, is kept');
  t.same(store.usage(), { bytes: 3000, maxBytes: 3000, evicted: 3 });

  await t.rejects(store.put('s', [sized('f', 2000), sized('g', 1500)], DAY, T0 + 9), {
    name: 'StoreCapacityError',
    bytes: 3500,
    maxBytes: 3000,
  });
  await t.rejects(store.put('s', [sized('h', 3001)], DAY, T0 + 9), { name: 'StoreCapacityError' }, 'one artifact over the cap');
  t.same(
    await held(store, ['c', 'e', 'f', 'g', 'h'], T0 + 10),
    ['c', 'e'],
    'a refused batch is refused whole: nothing stored, nothing evicted',
  );

  await store.put('s', [sized('c', 1000), sized('i', 2000)], DAY, T0 + 11);
  t.same(await held(store, ['c', 'e', 'i'], T0 + 12), ['c', 'i'], "a put's own artifacts are spared");
  t.equal((await use(store, ['c'], T0 + 12)).size, 1);
  await store.put('s', [sized('l', 1000)], 1, T0 + 13);
  t.same(await held(store, ['c', 'i', 'l'], T0 + 14), ['c', 'l'], 'i, stored with c but not read since, goes');
  await store.put('s', [sized('m', 2000)], DAY, T0 + 15);
  t.same(await held(store, ['c', 'l', 'm'], T0 + 16), ['l', 'm']);
  t.equal(store.usage()?.evicted, 6);
  // Redis expires keys by its own clock: let l's second pass there too.
  if (store.kind === 'redis') await sleep(1100);
  await store.put('s', [sized('n', 1000)], DAY, T0 + 5000);
  t.same(await held(store, ['l', 'm', 'n'], T0 + 5001), ['m', 'n']);
  t.same(
    store.usage(),
    { bytes: 3000, maxBytes: 3000, evicted: 6 },
    'an expired artifact removed on the way is not counted as evicted',
  );
}

/**
 * An agent calls fit every turn with its whole history: each response offloads the same originals
 * again. Another session's artifacts, never used again, must make room before them when other
 * callers' writes need it.
 */
async function agentTurns(t: Test, store: ArtifactStore): Promise<void> {
  await store.put('s', [sized('x1', 1000)], DAY, T0 + 1);
  await store.put('s', [sized('old1', 1000)], DAY, T0 + 2);
  await store.put('s', [sized('x1', 1000)], DAY, T0 + 3);
  await store.put('s', [sized('y1', 1000)], DAY, T0 + 4);
  await store.put('s', [sized('y2', 1000)], DAY, T0 + 5);
  t.same(
    await held(store, ['x1', 'old1', 'y1', 'y2'], T0 + 6),
    ['x1', 'y1', 'y2'],
    "the latest response's artifact survives; the older unused one made room",
  );
  t.equal(store.usage()?.evicted, 1);
}

/** A read that is a use extends the expiry too: at least half a TTL more, a full TTL from the read. */
async function useExtends(t: Test, store: ArtifactStore): Promise<void> {
  await store.put('s', [sized('p', 100)], 100, T0);
  const read = (await use(store, ['p'], T0 + 60_000, 100)).get(sized('p', 3).id);
  const slack = store.kind === 'redis' ? 2000 : 0;
  t.ok((read?.expires_at ?? 0) >= T0 + 160_000 - slack, `a use extends the expiry (${(read?.expires_at ?? 0) - T0} ms)`);
  t.equal(read?.created_at, T0, 'the creation time is kept');
  if (store.kind !== 'redis') t.equal((await held(store, ['p'], T0 + 150_000)).length, 1, 'alive past its first TTL');
}

/** Opens each store kind with `maxBytes`; Redis under a key prefix of its own, removed afterwards. */
async function capped(t: Test, kind: 'memory' | 'sqlite' | 'redis', maxBytes: number): Promise<ArtifactStore> {
  if (kind === 'memory') {
    const store = await openStore('memory:', { maxBytes });
    t.teardown(() => store.close());
    return store;
  }
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const store = await openStore(`sqlite:${join(dir, 'cap.db')}`, { maxBytes });
    t.teardown(() => store.close());
    return store;
  }
  const keyPrefix = `test-cap-${process.pid}-${Math.random().toString(16).slice(2)}:`;
  const store = await openStore(REDIS_URL, { maxBytes, keyPrefix });
  t.teardown(async () => {
    await store.close();
    await dropPrefix(keyPrefix);
  });
  return store;
}

const redisUp = await redisAvailable();
for (const kind of ['memory', 'sqlite', 'redis'] as const) {
  const skip = kind === 'redis' && !redisUp ? `no Redis answers at ${REDIS_URL}` : false;
  t.test(`${kind} store: least recently used first`, { skip }, async (t) => {
    await evictionOrder(t, await capped(t, kind, 3000));
  });
  t.test(`${kind} store: an agent calling fit every turn keeps the originals it refers to`, { skip }, async (t) => {
    await agentTurns(t, await capped(t, kind, 3000));
  });
  t.test(`${kind} store: a use extends the expiry`, { skip }, async (t) => {
    await useExtends(t, await capped(t, kind, 3000));
  });
}

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
  t.same(
    await held(store, ['a', 'b', 'c'], T0 + 4),
    ['b', 'c'],
    'migrated rows are evicted by their creation time (their last use, as far as the file knows)',
  );
});

t.test('sqlite: a file of version 1 (no record of use) opens, and its rows are evicted least recently used', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'v1.db');
  const db = new Database(file);
  // The layout version 1 left (src/store/sqlite-schema.ts before the table of last uses).
  db.exec(`CREATE TABLE scoped_artifacts (scope TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, tool_name TEXT,
      sha256 TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, bytes INTEGER NOT NULL,
      content TEXT NOT NULL, UNIQUE (scope, id));
    CREATE INDEX scoped_artifacts_by_age ON scoped_artifacts (created_at);
    CREATE INDEX scoped_artifacts_by_expiry ON scoped_artifacts (expires_at);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE store_totals (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
    INSERT INTO store_totals VALUES (0, 0);
    CREATE TRIGGER scoped_artifacts_added AFTER INSERT ON scoped_artifacts
      BEGIN UPDATE store_totals SET bytes = bytes + NEW.bytes WHERE id = 0; END;
    CREATE TRIGGER scoped_artifacts_removed AFTER DELETE ON scoped_artifacts
      BEGIN UPDATE store_totals SET bytes = bytes - OLD.bytes WHERE id = 0; END;
    INSERT INTO meta VALUES ('secret', 'kept-secret');
    PRAGMA user_version = 1`);
  const insert = db.prepare(
    'INSERT INTO scoped_artifacts (scope, id, kind, tool_name, sha256, created_at, expires_at, bytes, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (const [i, name] of ['a', 'b', 'c'].entries()) {
    const a = sized(name, 1000);
    insert.run('s', a.id, a.kind, a.tool_name, a.sha256, T0 + i, T0 + DAY * 1000, 1000, a.content);
  }
  db.close();
  const store = await openStore(`sqlite:${file}`, { maxBytes: 3000 });
  t.teardown(() => store.close());
  t.equal(await store.secret('new'), 'kept-secret', 'the installation secret is kept');
  t.same(store.usage(), { bytes: 3000, maxBytes: 3000, evicted: 0 }, 'the total is read back');
  t.equal((await use(store, ['a'], T0 + 10)).size, 1, 'a read of an old row is a use');
  await store.put('s', [sized('d', 1000)], DAY, T0 + 11);
  t.same(await held(store, ['a', 'b', 'c', 'd'], T0 + 12), ['a', 'c', 'd'], 'b, the least recently used, made room');
  const after = new Database(file, { readonly: true });
  t.teardown(() => after.close());
  t.equal(after.pragma('user_version', { simple: true }), 3, 'the file is at version 3');
  t.equal(after.prepare('SELECT count(*) FROM artifact_use').pluck().get(), 3, 'one row of use per artifact');
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
  t.match(metrics, /^compactor_artifacts_evicted_total\{store="memory",reason="cap"\} 1$/m, 'the eviction is counted');
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

t.test('through the service: originals offloaded again or read are kept; unused ones make room', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_STORE_MAX_BYTES: String(20 * 1024) });
  const compact = async (label: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/compact',
      payload: { messages: history(label, 8), keep_tool_uses: 1, min_tokens: 10, store: 'server' },
    });
    t.equal(res.statusCode, 200, `compact ${label}`);
    return res.json().artifacts[0].id as string;
  };
  const status = async (id: string) => (await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` })).statusCode;
  const alpha = await compact('alpha');
  const beta = await compact('beta');
  t.equal(await compact('alpha'), alpha, "the agent's next turn offloads alpha's original again");
  const gamma = await compact('gamma');
  t.equal(await status(alpha), 200, 'alpha, offloaded again, is kept');
  t.equal(await status(beta), 404, 'beta, unused since, made room');
  t.equal(await status(alpha), 200, 'a read is a use');
  await compact('delta');
  t.equal(await status(gamma), 404, 'gamma, newer than alpha but not read since, made room');
  t.equal(await status(alpha), 200);
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /^compactor_artifacts_evicted_total\{store="memory",reason="cap"\} 2$/m);
});
