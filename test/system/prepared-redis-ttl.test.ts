import type { Redis } from 'ioredis';
import t from 'tap';
import { build, fakeLlm } from '../support/app.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';
import { conversation, fitBody, SYSTEM, settled } from '../support/prepared.js';

/**
 * A prepared summary's job holds no history of its own: the range to summarize is one of the
 * caller's artifacts (it lives the artifacts' TTL and counts against the store's cap) and the
 * BullMQ job only its id. Once the TTL has passed, no key of the Redis (its own, so that every
 * key can be read) holds any of the history's text.
 */

const skip = hasRedisServer ? false : 'redis-server is not installed';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every value of every key, as text (whatever the key's type), with its key. */
async function everything(client: Redis): Promise<{ key: string; text: string }[]> {
  const out: { key: string; text: string }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await client.type(key);
      const value =
        type === 'string'
          ? await client.get(key)
          : type === 'hash'
            ? await client.hgetall(key)
            : type === 'list'
              ? await client.lrange(key, 0, -1)
              : type === 'set'
                ? await client.smembers(key)
                : type === 'zset'
                  ? await client.zrange(key, 0, -1)
                  : type === 'stream'
                    ? await client.xrange(key, '-', '+')
                    : null;
      if (value !== null) out.push({ key, text: JSON.stringify(value) });
    }
  } while (cursor !== '0');
  return out;
}

t.test('after the artifact TTL, no key in Redis holds the history a prepared summary was made of', { skip }, async (t) => {
  const redis = await ownRedis(t);
  const client = redis.client();
  const server = await fakeLlm(t);
  const app = await build(t, {
    COMPACTOR_STORE_URL: redis.url,
    COMPACTOR_ARTIFACT_TTL_SECONDS: '3',
    COMPACTOR_STORE_MAX_BYTES: String(1024 * 1024),
    OPENAI_BASE_URL: server.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    COMPACTOR_SHUTDOWN_GRACE_MS: '500',
  });
  const history = [SYSTEM, ...conversation(12)];
  const res = await app.inject({ method: 'POST', url: '/v1/fit', payload: fitBody(history) });
  t.equal(res.statusCode, 200);
  const prepared = res.json().prepared as { id: string; covers: { from: number; to: number } };
  t.equal(prepared?.covers.from, 2, 'a range is asked to be prepared');
  const range = history.slice(prepared.covers.from, prepared.covers.to);
  const marker = range[0]?.content.slice(0, 40) ?? '';
  t.ok(marker.length > 20);

  // While it is wanted, the range is in the store, and counted against the cap.
  const total = Number(await client.get('compactor:lru:total'));
  t.ok(total >= Buffer.byteLength(JSON.stringify(range)), 'the range counts against COMPACTOR_STORE_MAX_BYTES', { total });
  const holding = (await everything(client)).filter((k) => k.text.includes(marker)).map((k) => k.key);
  t.ok(holding.length > 0, 'the range is held somewhere while the job is to run');
  t.ok(
    holding.every((key) => key.startsWith('compactor:art:')),
    'only by an artifact (with its TTL), not by the job',
    { holding },
  );
  for (const key of holding) t.ok((await client.pttl(key)) > 0, `${key} expires`);

  t.equal((await settled(app, prepared.id)).state, 'ready', 'the job reads its range back and makes the summary');

  // The TTL (3 s, from the job's read of its range at the latest) and a margin.
  await sleep(4500);
  const left = (await everything(client)).filter((k) => k.text.includes(marker)).map((k) => k.key);
  t.same(left, [], 'no key holds the history once the artifacts expired');
  t.equal((await app.inject({ method: 'GET', url: `/v1/prepared/${prepared.id}` })).json().state, 'ready', 'the job state stays');
});
