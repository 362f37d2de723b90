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
  tokens: { client: number; forwarded: number; saved: number; window: number | null };
  prefix: { kept: boolean; broken_at: number | null };
  cache: { read: number | null; write: number | null };
  cost: { source: string } | null;
  artifacts: { id: string; kind: string; tool_name: string | null; message_index: number; tokens: number | null }[];
  summaries: { id: string; text_id: string | null; message_index: number; covered_messages: number; summarizer: string | null }[];
}

/** The window the proxy is told to fit to (COMPACTOR_PROXY_OPTIONS): what each recorded call names. */
const WINDOW = 120_000;

t.test('three proxied calls in one session are three calls of one conversation, the caller’s only', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_API_KEYS: `${KEY_A},${KEY_B}`,
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 2000, context_window: WINDOW }),
    }),
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const said: { outcome: string | null; conversation: string | null; tokens: string | null }[] = [];
  for (const steps of [3, 8, 14, 15]) {
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
    if (calls.length === 4 && calls.every((c) => c.cost?.source === 'usage')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.equal(calls.length, 4, 'four calls');
  t.same(
    calls.map((c) => c.outcome),
    said.map((s) => s.outcome),
    'each call’s outcome is what its x-compactor header said',
  );
  const reducedAt = calls.findIndex((c) => c.outcome === 'reduced');
  for (const [i, call] of calls.entries()) {
    t.equal(call.via, 'proxy');
    t.equal(call.tokens.window, WINDOW, 'the window the proxy fit to');
    const tokens = said[i]?.tokens;
    // Up to the first reduction the client's history is what fit read: the header's numbers.
    if (tokens && i <= reducedAt)
      t.equal(`${call.tokens.client}->${call.tokens.forwarded}`, tokens, 'the tokens the header said');
    if (tokens) t.equal(call.tokens.forwarded, Number(tokens.split('->')[1]), 'forwarded: as the header said');
    t.equal(call.cost?.source, 'usage', 'priced from the answer’s usage');
  }
  const models = fake.modelRequests();
  t.equal(models.length, 4);
  t.same(
    calls.map((c) => [c.cache.read, c.cache.write]),
    models.map((r) => [r.usage?.cacheRead, r.usage?.cacheWrite]),
    'the cache read and write the provider reported',
  );
  t.ok(
    calls.some((c) => (c.cache.write ?? 0) > 0),
    'a cache write was reported (the request marks a breakpoint)',
  );

  // What the reduction made: where the prefix broke, each original it offloaded (readable by its key only).
  const reduced = calls[reducedAt] as Call;
  const brokeAt = models[reducedAt]?.cache?.brokeAtSegment;
  t.equal(reduced.prefix.kept, false);
  t.equal(
    reduced.prefix.broken_at,
    (brokeAt ?? -1) - 2,
    'broken at the first upstream message the provider found changed (its segments: tools, system, then messages)',
  );
  t.ok(reduced.artifacts.length > 0, `${reduced.artifacts.length} originals offloaded`);
  const client = (body(14).messages as { content: unknown }[]).map((m) => m.content);
  for (const a of reduced.artifacts) {
    t.match(a, { kind: 'tool_result', tool_name: 'Bash' });
    t.ok((a.tokens ?? 0) > 1000, 'each original’s size');
    const original = await get(`/v1/artifacts/${a.id}`, KEY_A);
    t.equal(original.statusCode, 200, 'the original can be read');
    const shown = original.json().content as { content: unknown }[] | { content: unknown };
    const block = Array.isArray(shown) ? shown[0] : shown;
    t.same(block?.content, (client[a.message_index] as { content: unknown }[])[0]?.content, 'it is the message it says');
    t.equal((await get(`/v1/artifacts/${a.id}`, KEY_B)).statusCode, 404, 'not by another key');
  }
  t.same(
    calls.slice(0, reducedAt).flatMap((c) => c.artifacts),
    [],
    'calls before it made none',
  );
  // The call after it extends the reduction: the client had what went on plus what was left out.
  const next = calls[reducedAt + 1] as Call;
  t.equal(next.outcome, 'kept', 'the next call extends the reduction');
  t.equal(next.prefix.kept, true);
  t.same(next.artifacts, []);
  t.equal(next.tokens.saved, reduced.tokens.saved, 'it leaves out what the reduction removed');
  t.ok(next.tokens.client > reduced.tokens.client, 'the client’s history grew');

  const other = await get('/v1/conversations', KEY_B);
  t.equal(other.statusCode, 200);
  t.same(other.json().conversations, [], 'another key sees no conversation');
  t.equal((await get(`/v1/conversations/${conversation}`, KEY_B)).statusCode, 404, 'nor this one');
});

t.test('a reduction that summarizes records its summary: the range, the text the provider received, who wrote it', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_API_KEYS: KEY_A,
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 2000, limit: { tokens: 3000 }, context_window: WINDOW }),
    }),
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  // Plain prose, no tool output to clear, past the limit (a reduction is forced): only a summary brings it under the target.
  const turn = (i: number) =>
    Array.from({ length: 40 }, (_, k) => `Turn ${i}, point ${k}: the design keeps module ${i * 40 + k} apart.`).join(' ');
  const messages = Array.from({ length: 24 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: turn(i) }));
  const res = await fetch(`${base}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'x-compactor-key': KEY_A },
    body: JSON.stringify({ model: 'claude-opus-4-8', max_tokens: 1000, messages }),
  });
  t.equal(res.status, 200);
  await res.text();
  t.equal(res.headers.get('x-compactor'), 'reduced');
  const conversation = res.headers.get('x-compactor-conversation');
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${KEY_A}` } });
  let call: Call | undefined;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !call) {
    const one = await get(`/v1/conversations/${conversation}`);
    if (one.statusCode === 200) call = (one.json().calls as Call[])[0];
    if (!call) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!call) throw new Error('the call was not recorded');
  t.equal(call.summaries.length, 1, 'one summary');
  const s = call.summaries[0];
  if (!s?.text_id) throw new Error('the summary text is not linked');
  t.equal(s.summarizer, 'extractive', 'no LLM configured: the extractive summary stood in');
  t.ok(s.covered_messages > 1 && s.covered_messages < messages.length, `it stands for ${s.covered_messages} messages`);
  const text = (await get(`/v1/artifacts/${s.text_id}`)).json().content as string;
  t.ok(text.length > 0);
  const sent = fake.modelRequests()[0]?.json as { messages: { content: unknown }[] };
  t.ok(
    JSON.stringify(sent.messages[s.message_index]).includes(JSON.stringify(text).slice(1, 200)),
    'the text the provider received, where the record says',
  );
  const range = await get(`/v1/artifacts/${s.id}`);
  t.equal(range.statusCode, 200, 'and the range it stands for');
  t.match(JSON.stringify(range.json().content), /Turn 1, point 0/, 'the original messages');
  t.notMatch(JSON.stringify(call), /Turn \d|the design keeps/, 'the record itself holds no content');
});
