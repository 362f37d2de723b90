/**
 * An original already stored is not written again (issue 40): a growing conversation offloads the
 * same originals on every call, and under a cap each used to be rewritten or at least marked used
 * on every call. Now the service sends only what is new; what it stored a moment ago goes as kept
 * ids, marked used in memory and written in one batch before the store evicts. Counted here: a
 * second identical call writes nothing, in every store; and eviction stays least recently used:
 * an original used again (without being written again) outlives one not used since.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t, { type Test } from 'tap';
import { ArtifactService, type Caller } from '../../src/service/artifacts.js';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore, KeptArtifacts, NewArtifact } from '../../src/store/types.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/** An artifact whose content is exactly `bytes` bytes of JSON. */
function sized(name: string, bytes: number): NewArtifact {
  const content = JSON.stringify(name.padEnd(bytes - 2, '.'));
  return { id: `art_${name.padStart(24, '0')}`, kind: 'tool_result', tool_name: 'bash', content, sha256: 'x' };
}

const T0 = 1_800_000_000_000;
const DAY = 24 * 3600;
const caller = { scope: 's' } as Caller;

/** What the service asked the store to do: puts, originals sent with their content, kept ids. */
interface Count {
  puts: number;
  sent: number;
  kept: number;
}

/** The store, its puts counted. */
function counted(store: ArtifactStore): { store: ArtifactStore; count: Count } {
  const count: Count = { puts: 0, sent: 0, kept: 0 };
  const put = store.put.bind(store);
  store.put = (scope: string, artifacts: readonly NewArtifact[], ttl: number, now: number, kept?: KeptArtifacts) => {
    count.puts++;
    count.sent += artifacts.length;
    count.kept += kept?.ids.length ?? 0;
    return put(scope, artifacts, ttl, now, kept);
  };
  return { store, count };
}

interface Opened {
  store: ArtifactStore;
  /** Commits to the store's data by any writer so far (SQLite: the file's data version; Redis: the put script's runs). */
  writes(): number;
}

async function open(t: Test, kind: 'memory' | 'sqlite' | 'redis', maxBytes: number): Promise<Opened> {
  if (kind === 'memory') {
    const store = await openStore('memory:', { maxBytes });
    t.teardown(() => store.close());
    return { store, writes: () => 0 };
  }
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-kept-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'kept.db');
    const store = await openStore(`sqlite:${file}`, { maxBytes });
    // Another connection's data version changes with every commit of this one.
    const watcher = new Database(file, { readonly: true });
    let version = 0;
    const writes = () => {
      const now = watcher.pragma('data_version', { simple: true }) as number;
      if (now !== version) version = now;
      return version;
    };
    t.teardown(async () => {
      watcher.close();
      await store.close();
    });
    return { store, writes };
  }
  const keyPrefix = `test-kept-${process.pid}-${Math.random().toString(16).slice(2)}:`;
  const store = await openStore(REDIS_URL, { maxBytes, keyPrefix });
  const client = (store as unknown as { client: { compactorPut: (...args: unknown[]) => unknown } }).client;
  const script = client.compactorPut.bind(client);
  let runs = 0;
  client.compactorPut = (...args: unknown[]) => {
    runs++;
    return script(...args);
  };
  t.teardown(async () => {
    await store.close();
    await dropPrefix(keyPrefix);
  });
  return { store, writes: () => runs };
}

const redisUp = await redisAvailable();
for (const kind of ['memory', 'sqlite', 'redis'] as const) {
  const skip = kind === 'redis' && !redisUp ? `no Redis answers at ${REDIS_URL}` : false;

  t.test(`${kind}: a second identical call writes nothing`, { skip }, async (t) => {
    // The default cap (1 GiB): far from full, as in the growing-conversation benchmark.
    const opened = await open(t, kind, 1024 ** 3);
    const { store, count } = counted(opened.store);
    let now = T0;
    const service = new ArtifactService({ store, ttlSeconds: DAY, now: () => now });
    const originals = ['a', 'b', 'c', 'd'].map((n) => sized(n, 500));
    await service.persist(caller, originals);
    t.same(count, { puts: 1, sent: 4, kept: 0 }, 'the first call stores its originals');
    const before = opened.writes();
    now += 1000;
    await service.persist(caller, originals);
    t.same(count, { puts: 2, sent: 4, kept: 4 }, 'the second sends none of them again, only their ids');
    t.equal(opened.writes(), before, 'and nothing is written to the store');
    now += 1000;
    await service.persist(caller, [...originals, sized('e', 500)]);
    t.same(count, { puts: 3, sent: 5, kept: 8 }, 'a call with one new original sends that one');
    const found = await store.get(
      's',
      [...originals, sized('e', 500)].map((a) => a.id),
      now,
    );
    t.equal(found.size, 5, 'every original is stored');
  });

  t.test(`${kind}: an original used again is kept; one not used since makes room`, { skip }, async (t) => {
    const { store, count } = counted((await open(t, kind, 3000)).store);
    let now = T0;
    const service = new ArtifactService({ store, ttlSeconds: DAY, now: () => now });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => sized(n, 1000)) as [NewArtifact, NewArtifact, NewArtifact, NewArtifact];
    await service.persist(caller, [a]);
    now += 1;
    await service.persist(caller, [b]);
    now += 1;
    // The agent's next call names a again: not written, only marked used (held in memory).
    await service.persist(caller, [a]);
    t.same(count, { puts: 3, sent: 2, kept: 1 }, 'a is not sent again');
    now += 1;
    await service.persist(caller, [c]);
    now += 1;
    await service.persist(caller, [d]);
    const held = await store.get(
      's',
      [a, b, c, d].map((x) => x.id),
      now,
    );
    t.same(
      [a, b, c, d].filter((x) => held.has(x.id)).map((x) => x.id.slice(-1)),
      ['a', 'c', 'd'],
      'b, stored after a but not used since, made room; a, used since, is kept',
    );
    t.equal(store.usage()?.evicted, 1);

    // Something was evicted: SQLite and Redis no longer vouch for what the service sent before
    // (another writer may have evicted it), and the next call sends its originals again, with
    // their content; memory knows exactly what it holds.
    now += 1;
    const sentBefore = count.sent;
    await service.persist(caller, [a, c]);
    t.equal(count.sent - sentBefore, kind === 'memory' ? 0 : 2, 'after an eviction the call sends its originals again');
    t.equal((await store.get('s', [a.id, c.id], now)).size, 2);

    // A kept original is spared by the eviction of the same call's new one.
    now += 1;
    await service.persist(caller, [a, c]);
    now += 1;
    await service.persist(caller, [a, c, sized('e', 1000)]);
    const after = await store.get('s', [a.id, c.id, d.id, sized('e', 1000).id], now);
    t.same(
      [...after.keys()].map((id) => id.slice(-1)).sort(),
      ['a', 'c', 'e'],
      "a call's kept originals are spared: d made room",
    );
  });
}

t.test('sqlite: a read that is a use writes nothing while half its TTL is left, its use written later', async (t) => {
  const opened = await open(t, 'sqlite', 1024 ** 3);
  const { store } = opened;
  const a = sized('a', 500);
  await store.put('s', [a], DAY, T0);
  const before = opened.writes();
  // A summary read on every call of a conversation: each read is a use.
  for (let k = 1; k <= 5; k++) t.equal((await store.get('s', [a.id], T0 + k * 1000, { ttlSeconds: DAY })).size, 1);
  t.equal(opened.writes(), before, 'five reads that are uses commit nothing');
  const listed = await store.recent('s', ['tool_result'], T0 + 6000, { count: 10, bytes: 1_000_000 });
  t.same(
    listed.map((x) => x.id),
    [a.id],
  );
  t.not(opened.writes(), before, 'the held use is written before the connection lists by recency');
  // With less than half its TTL left, a use extends the expiry at once.
  const late = T0 + (DAY * 1000 * 3) / 4;
  const marked = opened.writes();
  const read = (await store.get('s', [a.id], late, { ttlSeconds: DAY })).get(a.id);
  t.ok((read?.expires_at ?? 0) >= late + DAY * 1000, 'the expiry is extended by the read');
  t.not(opened.writes(), marked, 'and written at once');
});
