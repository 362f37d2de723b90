import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore, NewArtifact } from '../../src/store/types.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/**
 * `recent`, what the MCP search reads, in every store: a scope's live artifacts of the asked
 * kinds, most recently used first, within the count and the bytes asked for; another scope's,
 * expired ones and other kinds never.
 */

const art = (id: string, kind: string, content: string): NewArtifact => ({ id, kind, tool_name: 'bash', content, sha256: id });

async function check(t: Test, store: ArtifactStore): Promise<void> {
  const now = 1_000_000;
  await store.put('a', [art('art_1', 'tool_result', '"one"')], 60, now);
  await store.put('a', [art('art_2', 'summary_range', '"two"')], 60, now + 1);
  await store.put('a', [art('art_3', 'proxy_state', '"state"')], 60, now + 2);
  await store.put('b', [art('art_4', 'tool_result', '"theirs"')], 60, now + 3);
  await store.put('a', [art('art_5', 'tool_result', '"gone"')], 1, now + 4);
  // art_1 read as a use: now the most recently used.
  await store.get('a', ['art_1'], now + 5, { ttlSeconds: 60 });
  const kinds = ['tool_result', 'summary_range'];
  const listed = await store.recent('a', kinds, now + 2000, { count: 10, bytes: 1_000_000 });
  t.same(
    listed.map((a) => a.id),
    ['art_1', 'art_2'],
    'own, live, of the kinds asked, most recently used first',
  );
  t.same(
    (await store.recent('a', kinds, now + 2000, { count: 1, bytes: 1_000_000 })).map((a) => a.id),
    ['art_1'],
    'count',
  );
  t.same(
    (await store.recent('a', kinds, now + 2000, { count: 10, bytes: 5 })).map((a) => a.id),
    ['art_1'],
    'bytes (one at least)',
  );
  t.same(await store.recent('c', kinds, now, { count: 10, bytes: 1000 }), [], 'an unknown scope has none');
}

t.test('memory', async (t) => {
  const store = await openStore('memory:');
  t.teardown(() => store.close());
  await check(t, store);
});

t.test('sqlite', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-recent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(`sqlite:${join(dir, 'a.db')}`);
  t.teardown(() => store.close());
  await check(t, store);
});

t.test('redis', async (t) => {
  if (!(await redisAvailable())) {
    t.pass('redis', { skip: `no Redis at ${REDIS_URL}` });
    return;
  }
  const prefix = `recent-test-${randomBytes(4).toString('hex')}:`;
  t.teardown(() => dropPrefix(prefix));
  const store = await openStore(REDIS_URL, { keyPrefix: prefix });
  t.teardown(() => store.close());
  await check(t, store);
});
