import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore } from '../../src/store/types.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/**
 * `claim`: of the calls that claim one key at once, through one store object or several sharing
 * it (SQLite connections on one file, Redis clients), exactly one gets true; the claim lives its
 * TTL, is per scope, and can be taken again once expired. What bills a prepared summary once.
 */

const T0 = 1_700_000_000_000;
const redis = await redisAvailable();

/** Two handles on one store: the same object (memory), two connections (SQLite), two clients (Redis). */
async function pair(t: Test, kind: string): Promise<[ArtifactStore, ArtifactStore]> {
  if (kind === 'memory') {
    const store = await openStore('memory:');
    t.teardown(() => store.close());
    return [store, store];
  }
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-claim-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const a = await openStore(`sqlite:${join(dir, 'a.db')}`);
    const b = await openStore(`sqlite:${join(dir, 'a.db')}`, { mustExist: true });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    return [a, b];
  }
  const keyPrefix = `compactor-test-claim-${randomUUID().slice(0, 8)}:`;
  const a = await openStore(REDIS_URL, { keyPrefix });
  const b = await openStore(REDIS_URL, { keyPrefix });
  t.teardown(async () => {
    await a.close();
    await b.close();
    await dropPrefix(keyPrefix);
  });
  return [a, b];
}

for (const kind of ['memory', 'sqlite', 'redis']) {
  t.test(
    `${kind}: one claim wins, for its TTL, per scope`,
    { skip: kind === 'redis' && !redis ? 'no Redis' : false },
    async (t) => {
      const [a, b] = await pair(t, kind);
      // Redis keeps time itself: its claims are checked with a real TTL, the others with the given clock.
      const now = kind === 'redis' ? Date.now() : T0;
      const won = await Promise.all([a, b, a, b, a, b].map((s) => s.claim('s', 'prepared:x', 60, now)));
      t.equal(won.filter(Boolean).length, 1, 'six concurrent claims: one wins');
      t.equal(await a.claim('s', 'prepared:x', 60, now + 1000), false, 'and the claim holds');
      t.equal(await b.claim('other', 'prepared:x', 60, now), true, 'another scope claims its own');
      t.equal(await b.claim('s', 'prepared:y', 60, now), true, 'another id is another claim');
      if (kind === 'redis') {
        t.equal(await a.claim('s', 'prepared:short', 0.05, now), true);
        await new Promise((resolve) => setTimeout(resolve, 120));
        t.equal(await b.claim('s', 'prepared:short', 60, now), true, 'an expired claim is taken again');
      } else {
        t.equal(await a.claim('s', 'prepared:x', 60, now + 60_000), true, 'an expired claim is taken again');
        t.equal(await b.claim('s', 'prepared:x', 60, now + 61_000), false);
      }
    },
  );
}
