import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { build } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';

/**
 * A real store outage, not a faked error: the proxy still forwards the call, and says why it did
 * not reduce it (`x-compactor: bypass; reason=store`), since the conversation's state is read
 * through the artifact service, which turns the stores' own failures into its coded errors.
 */

const body = {
  model: 'claude-opus-4-8',
  max_tokens: 1024,
  system: 'You are an agent.',
  messages: [
    { role: 'user', content: 'Count the lines.' },
    { role: 'assistant', content: 'Counting.' },
    { role: 'user', content: 'Go on.' },
  ],
};

async function call(
  t: Test,
  storeUrl: string,
  breakStore: (app: FastifyInstance) => Promise<void>,
  overrides: Partial<Record<keyof Config, string>> = {},
): Promise<void> {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: storeUrl,
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    // Generous: the store's failure, not the budget, must be what stops the reduction.
    COMPACTOR_PROXY_BUDGET_MS: '120000',
    ...overrides,
  });
  const { base } = await listen(app);
  const send = () =>
    fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-outage', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
  const before = await send();
  await before.text();
  t.equal(before.status, 200);
  t.notMatch(before.headers.get('x-compactor'), /^bypass/, `with the store up, no bypass (${before.headers.get('x-compactor')})`);
  await breakStore(app);
  const res = await send();
  await res.text();
  t.equal(res.status, 200, 'the call still went through');
  t.equal(res.headers.get('x-compactor'), 'bypass; reason=store', 'and named the store');
  t.equal(fake.requests.at(-1)?.path, '/v1/messages');
}

t.test('a SQLite store closed under the proxy: reason=store', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-outage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A closed better-sqlite3 database refuses every statement: the store's own StoreUnavailableError.
  await call(t, `sqlite:${join(dir, 'store.db')}`, (app) => app.store.close());
});

// Closing the app after its Redis died used to leave BullMQ's timers running, and this file never
// exited (issue 36): test/integration/close-after-redis.test.ts proves the process now exits.
t.test('a Redis killed under the proxy: reason=store', { skip: !hasRedisServer && 'no redis-server' }, async (t) => {
  const redis = await ownRedis(t);
  await call(t, redis.url, () => redis.kill());
});
