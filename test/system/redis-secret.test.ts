import t from 'tap';
import { build } from '../support/app.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';

/**
 * Replicas agree on the installation secret (it keys artifact ids, scopes and markers) even after
 * Redis loses its data (restarted without persistence; FLUSHALL on a Redis of the test's own
 * here): the running replica writes its secret back (each readiness probe re-asserts it), so a
 * replica started later agrees with it; one started before the write-back made another secret,
 * and readiness of the first then fails, saying why, instead of the two diverging silently.
 */

const skip = hasRedisServer ? false : 'redis-server is not installed';

const big = (label: string) => Array.from({ length: 80 }, (_, i) => `${label} ${i}: value ${i * 13}`).join('\n');
const history = [
  { role: 'user', content: 'task' },
  ...['a', 'b'].flatMap((id) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: `{"command":"${id}"}` } }],
    },
    { role: 'tool', tool_call_id: id, content: big(id) },
  ]),
];
const compactBody = { messages: history, keep_tool_uses: 1 };

t.test('after FLUSHALL, the running replica writes its secret back: a new replica agrees with it', { skip }, async (t) => {
  const redis = await ownRedis(t);
  const client = redis.client();
  const a = await build(t, { COMPACTOR_STORE_URL: redis.url });
  const first = (await a.inject({ method: 'POST', url: '/v1/compact', payload: compactBody })).json();
  const id = first.artifacts[0].id as string;

  await client.flushall();
  t.equal(await client.get('compactor:secret'), null, 'Redis lost the secret');
  const ready = await a.inject({ method: 'GET', url: '/health/ready' });
  t.equal(ready.statusCode, 200, 'the running replica stays ready');
  t.ok(await client.get('compactor:secret'), 'and wrote its secret back');

  const b = await build(t, { COMPACTOR_STORE_URL: redis.url });
  const again = (await b.inject({ method: 'POST', url: '/v1/compact', payload: compactBody })).json();
  t.equal(again.artifacts[0].id, id, 'the new replica gives the same original the same id: one secret');
  const expanded = (await b.inject({ method: 'POST', url: '/v1/expand', payload: { messages: first.messages } })).json();
  t.same(expanded.messages, history, "the new replica restores the first one's placeholders");
});

t.test(
  'a replica started while the secret was lost made another: the first one is not ready, and says why',
  { skip },
  async (t) => {
    const redis = await ownRedis(t);
    const client = redis.client();
    const a = await build(t, { COMPACTOR_STORE_URL: redis.url });
    t.equal((await a.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200);
    const secret = await client.get('compactor:secret');
    const compacted = (await a.inject({ method: 'POST', url: '/v1/compact', payload: compactBody })).json();

    await client.flushall();
    // B boots before A's next probe: it makes a secret of its own.
    const b = await build(t, { COMPACTOR_STORE_URL: redis.url });
    t.not(await client.get('compactor:secret'), secret, 'the new replica made another secret');
    const expanded = (await b.inject({ method: 'POST', url: '/v1/expand', payload: { messages: compacted.messages } })).json();
    t.ok(
      (expanded.warnings as { code: string }[]).some((w) => w.code === 'placeholder_not_verified'),
      "its expand of the first one's placeholders says it cannot verify them, rather than restoring nothing silently",
    );
    // A's cached answer (at most 1.5 s old) passes first; the check after it sees the split.
    let ready = await a.inject({ method: 'GET', url: '/health/ready' });
    const end = Date.now() + 30_000;
    while (ready.statusCode === 200 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      ready = await a.inject({ method: 'GET', url: '/health/ready' });
    }
    t.equal(ready.statusCode, 503, 'the replica whose secret is not the stored one is not ready');
    t.equal(ready.json().status, 'store_failed');
    t.match(ready.json().reason, /another installation secret/, 'naming the split');
    t.notMatch(ready.json().reason, new RegExp(secret ?? 'none'), 'never the secret itself');
  },
);
