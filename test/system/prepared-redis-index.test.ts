import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import { addresser } from '../../src/history/address.js';
import { ArtifactService } from '../../src/service/artifacts.js';
import type { Compactor } from '../../src/service/compactor.js';
import { RedisPreparer, type RedisPreparerOptions } from '../../src/service/prepare-redis.js';
import type { PrepareEvent } from '../../src/service/prepared-summaries.js';
import { MemoryStore } from '../../src/store/memory.js';
import { dropPrefix, REDIS_URL, redisAvailable } from '../support/redis.js';

/**
 * The Redis index of prepared ranges on its own (two `RedisPreparer`s as two replicas, a stand-in
 * for the compactor whose summaries cost 10 tokens, its artifacts in memory): the newest `perScope` kept per caller, the
 * dropped ready ones counted as wasted, its keys expiring, a splice billed once across replicas.
 */

const redis = await redisAvailable();
const skip = redis ? false : `no Redis answers at ${REDIS_URL}`;
if (!redis) console.log(`# skipping the prepared-index-on-Redis tests: ${skip}`);

const usage = { input_tokens: 8, output_tokens: 2, cached_input_tokens: 0, calls: 1, model: 'm', total_tokens: 10 };
// A job's range lives in the store, as the service's: a memory store here.
const compactor = {
  callerOfScope: (scope: string) => ({ scope, address: addresser('index-test-secret', scope) }),
  artifacts: new ArtifactService({ store: new MemoryStore(), ttlSeconds: 60, now: Date.now }),
  run: async () => ({ usage }),
} as unknown as Compactor;
const body = { messages: [{ role: 'user', content: 'hello' }] };

async function replica(t: Test, prefix: string, options: Partial<RedisPreparerOptions> = {}) {
  const events: [PrepareEvent, number][] = [];
  const preparer = await RedisPreparer.open(compactor, {
    url: REDIS_URL,
    prefix,
    concurrency: 2,
    byDefault: true,
    onEvent: (event, tokens) => events.push([event, tokens]),
    ...options,
  });
  t.teardown(() => preparer.close(500));
  return { preparer, events };
}

/** Waits until every range of `scope` is ready (or a generous bound passes). */
async function allReady(p: RedisPreparer, scope: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const { entries } = await p.context(scope);
    if (entries.every((e) => e.state === 'ready')) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const range = (i: number) => ({ id: `r${i}`, prefix: 'p', from: 2, to: 10 + i, body });

t.test('the newest ranges are kept per caller; the dropped ready ones are wasted; the keys expire', { skip }, async (t) => {
  const prefix = `compactor-test-prepidx-${randomUUID().slice(0, 8)}`;
  t.teardown(() => dropPrefix(prefix));
  const { preparer, events } = await replica(t, prefix, { perScope: 3, ttlSeconds: 60 });
  for (const i of [0, 1, 2]) await preparer.after('s1', { prepare: range(i) });
  await preparer.after('s2', { prepare: range(9) });
  await allReady(preparer, 's1');
  for (const i of [3, 4]) await preparer.after('s1', { prepare: range(i) });
  const { entries } = await preparer.context('s1');
  t.same(
    entries.map((e) => e.id),
    ['r2', 'r3', 'r4'],
    'the newest 3, oldest first',
  );
  t.equal((await preparer.context('s2')).entries.length, 1, "another caller's are kept apart");
  t.equal(await preparer.view('s1', 'r0'), undefined, 'a dropped one is gone');
  t.same(
    events.filter(([e]) => e === 'wasted'),
    [
      ['wasted', 10],
      ['wasted', 10],
    ],
    'dropped unused after being made: wasted, with their tokens',
  );
  const client = new Redis(REDIS_URL);
  t.teardown(() => client.quit());
  const ttl = await client.pttl(`${prefix}:ranges:{s1}`);
  t.ok(ttl > 0 && ttl <= 60_000, 'the index expires');
});

t.test('a splice is billed once across replicas; its usage leaves the context once billed', { skip }, async (t) => {
  const prefix = `compactor-test-prepidx-${randomUUID().slice(0, 8)}`;
  t.teardown(() => dropPrefix(prefix));
  const a = await replica(t, prefix);
  const b = await replica(t, prefix);
  await a.preparer.after('s', { prepare: range(0) });
  await allReady(b.preparer, 's');
  const [entry] = (await b.preparer.context('s')).entries;
  t.same(entry?.usage, usage, 'B sees the unbilled usage of what A asked for');
  await Promise.all([a.preparer.after('s', { spliced: 'r0' }), b.preparer.after('s', { spliced: 'r0' })]);
  const spliced = [...a.events, ...b.events].filter(([e]) => e === 'spliced');
  t.same(spliced, [['spliced', 10]], 'counted once');
  for (const p of [a.preparer, b.preparer]) {
    const [e] = (await p.context('s')).entries;
    t.equal(e?.state, 'spliced');
    t.equal(e?.usage, undefined, 'no longer billable');
    t.equal((await p.view('s', 'r0'))?.usage?.total_tokens, 10, 'the view still shows what it cost');
  }
  t.equal(await b.preparer.view('other', 'r0'), undefined, 'another scope cannot read it');
});
