import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * Each proxied model call is recorded in its conversation's record (`GET /v1/conversations…`):
 * the outcome its `x-compactor` header said, the tokens forwarded, and — once the answer's usage
 * is read — the cache read/write the provider reported. Another key sees none of it.
 */

const KEY_A = 'key-a-0123456789abcdef';
const KEY_B = 'key-b-0123456789abcdef';

const output = (step: number) => Array.from({ length: 300 }, (_, i) => `line ${step}.${i}: some output`).join('\n');

function body(steps: number): Record<string, unknown> {
  const messages: unknown[] = [
    { role: 'user', content: [{ type: 'text', text: 'the task', cache_control: { type: 'ephemeral' } }] },
  ];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: 'ls' } }],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${s}`, content: output(s) }] });
  }
  return { model: 'claude-opus-4-8', max_tokens: 1000, system: 'a system prompt', messages };
}

interface Call {
  outcome: string;
  reason: string | null;
  via: string;
  tokens: { client: number; forwarded: number };
  cache: { read: number | null; write: number | null };
  cost: { source: string } | null;
}

t.test('three proxied calls in one session are three calls of one conversation, the caller’s only', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_API_KEYS: `${KEY_A},${KEY_B}`,
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 2000 }),
    }),
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const said: { outcome: string | null; conversation: string | null; tokens: string | null }[] = [];
  for (const steps of [3, 8, 14]) {
    const res = await fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-test',
        'x-compactor-key': KEY_A,
        'x-claude-code-session-id': 'session-1',
      },
      body: JSON.stringify(body(steps)),
    });
    t.equal(res.status, 200);
    await res.text();
    said.push({
      outcome: res.headers.get('x-compactor'),
      conversation: res.headers.get('x-compactor-conversation'),
      tokens: res.headers.get('x-compactor-tokens'),
    });
  }
  const conversation = said[0]?.conversation;
  t.ok(conversation, `the calls name a conversation (${JSON.stringify(said)})`);
  t.ok(
    said.every((s) => s.conversation === conversation),
    'one session, one conversation',
  );
  t.ok(
    said.some((s) => s.outcome === 'reduced'),
    'the session grew until a call was reduced',
  );
  const get = (url: string, key: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

  const list = await get('/v1/conversations', KEY_A);
  t.equal(list.statusCode, 200);
  t.same(
    list.json().conversations.map((c: { id: string }) => c.id),
    [conversation],
  );

  // The usage is recorded once each answer has been read: polled to a generous deadline.
  let calls: Call[] = [];
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const one = await get(`/v1/conversations/${conversation}`, KEY_A);
    t.equal(one.statusCode, 200);
    calls = one.json().calls;
    if (calls.length === 3 && calls.every((c) => c.cost?.source === 'usage')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.equal(calls.length, 3, 'three calls');
  t.same(
    calls.map((c) => c.outcome),
    said.map((s) => s.outcome),
    'each call’s outcome is what its x-compactor header said',
  );
  for (const [i, call] of calls.entries()) {
    t.equal(call.via, 'proxy');
    const tokens = said[i]?.tokens;
    if (tokens) t.equal(`${call.tokens.client}->${call.tokens.forwarded}`, tokens, 'the tokens the header said, forwarded');
    t.equal(call.cost?.source, 'usage', 'priced from the answer’s usage');
  }
  const models = fake.modelRequests();
  t.equal(models.length, 3);
  t.same(
    calls.map((c) => [c.cache.read, c.cache.write]),
    models.map((r) => [r.usage?.cacheRead, r.usage?.cacheWrite]),
    'the cache read and write the provider reported',
  );
  t.ok(
    calls.some((c) => (c.cache.write ?? 0) > 0),
    'a cache write was reported (the request marks a breakpoint)',
  );

  const other = await get('/v1/conversations', KEY_B);
  t.equal(other.statusCode, 200);
  t.same(other.json().conversations, [], 'another key sees no conversation');
  t.equal((await get(`/v1/conversations/${conversation}`, KEY_B)).statusCode, 404, 'nor this one');
});
