import { Redis } from 'ioredis';

/** The Redis the tests use: `COMPACTOR_TEST_REDIS_URL`, else the standard local port. */
export const REDIS_URL = process.env.COMPACTOR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

/** Whether that Redis answers; tests that need it are skipped (and reported so) when it does not. */
export async function redisAvailable(): Promise<boolean> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Deletes every key under `prefix` in the test Redis (a test's own keys, never another's). */
export async function dropPrefix(prefix: string): Promise<void> {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}
