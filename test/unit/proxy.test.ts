import t from 'tap';
import {
  compress,
  conversationKey,
  expandSlots,
  prefixHashes,
  resolve,
  type Slot,
  untouched,
} from '../../src/proxy/conversation.js';
import { clientResponseHeaders, credentialOf, upstreamRequestHeaders } from '../../src/proxy/headers.js';
import { PROVIDERS } from '../../src/proxy/providers.js';
import { Upstreams } from '../../src/proxy/upstream.js';
import { lastUsageObject, TAIL, UsageTap } from '../../src/proxy/usage-tap.js';

const sse = (events: [string, unknown][]) =>
  events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');

/** Feeds a text to a tap in pieces of `size` bytes. */
function tapped(text: string, sseMode: boolean, size: number): Record<string, unknown> | undefined {
  const tap = new UsageTap(sseMode);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) tap.write(bytes.subarray(i, i + size));
  return tap.end();
}

t.test('the usage tap reads each provider’s usage from its stream or its JSON, in any chunking', async (t) => {
  const anthropic = sse([
    [
      'message_start',
      { type: 'message_start', message: { id: 'm', usage: { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 1 } } },
    ],
    ['content_block_delta', { type: 'content_block_delta', delta: { type: 'text_delta', text: 'say "usage": {no}' } }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 42 } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
  for (const size of [1, 7, 64, 100_000]) {
    t.same(
      tapped(anthropic, true, size),
      { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 42 },
      `Anthropic: message_start completed by message_delta (chunks of ${size})`,
    );
  }
  const responses = sse([
    ['response.created', { type: 'response.created', response: { id: 'r', usage: null } }],
    [
      'response.completed',
      {
        type: 'response.completed',
        response: {
          id: 'r',
          output: [],
          usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 3 }, output_tokens: 2, total_tokens: 7 },
        },
      },
    ],
  ]);
  t.same(tapped(responses, true, 13), {
    input_tokens: 5,
    input_tokens_details: { cached_tokens: 3 },
    output_tokens: 2,
    total_tokens: 7,
  });
  const chat =
    'data: {"choices":[{"delta":{"content":"x"}}],"usage":null}\n\ndata: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\ndata: [DONE]\n\n';
  t.same(tapped(chat, true, 5), { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 }, 'Chat: the final usage chunk');
  t.equal(
    tapped('data: {"choices":[],"usage":null}\n\ndata: [DONE]\n\n', true, 5),
    undefined,
    'Chat without include_usage: none',
  );
  const gemini =
    '[{"candidates":[],"usageMetadata":{"promptTokenCount":3}},\n{"candidates":[],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7}}]';
  t.same(
    tapped(gemini, false, 11),
    { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 },
    'Gemini: the last usageMetadata',
  );
  const json = JSON.stringify({
    id: 'm',
    content: [{ type: 'text', text: 'x'.repeat(3 * TAIL) }],
    usage: { input_tokens: 1, output_tokens: 2 },
  });
  t.same(tapped(json, false, 65_536), { input_tokens: 1, output_tokens: 2 }, 'a JSON answer far larger than the tail');
  const long = sse([
    ['response.completed', { response: { output: [{ text: 'y'.repeat(3 * TAIL) }], usage: { total_tokens: 8 } } }],
  ]);
  t.same(tapped(long, true, 65_536), { total_tokens: 8 }, 'one SSE event far larger than the tail');
  t.equal(lastUsageObject('{"usage":{"a":1'), undefined, 'a cut answer has none');
  t.same(lastUsageObject('{"usage": {"a":"}{"}}'), { a: '}{' }, 'braces inside strings do not count');
});

t.test('conversation state: markers and one-block texts do not change the past; a rewrite does', async (t) => {
  const { markers } = PROVIDERS.anthropic;
  const { normalized } = markers;
  const followMarkers = markers.follow;
  const a = { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] };
  t.equal(normalized(a), normalized({ role: 'user', content: [{ type: 'text', text: 'hi' }] }), 'a moved cache marker');
  t.equal(normalized(a), normalized({ role: 'user', content: 'hi' }), 'one text block is its text');
  t.not(normalized(a), normalized({ role: 'user', content: 'ho' }));
  const key = conversationKey(PROVIDERS.anthropic, 'session', 'system', a);
  t.not(
    key,
    conversationKey(PROVIDERS.anthropic, 'session', 'system', { role: 'user', content: 'other task' }),
    'sub-agents are conversations of their own',
  );
  const messages = [a, { role: 'assistant', content: 'x' }, { role: 'user', content: 'y' }];
  const hashes = prefixHashes(key, messages, markers);
  t.equal(hashes.length, 4);
  t.same(prefixHashes(key, messages.slice(0, 2), markers), hashes.slice(0, 3), 'a prefix hashes as the longer history’s prefix');
  const upstream: Slot[] = compress([
    { run: [0, 1] },
    { ours: { role: 'assistant', content: [{ type: 'text', text: 'P' }] }, of: 1 },
    { run: [2, 3] },
  ]);
  t.same(expandSlots(upstream).length, 3);
  t.same(
    resolve(upstream, messages, markers).map((m) => (m as { role: string }).role),
    ['user', 'assistant', 'user'],
  );
  t.ok(untouched(compress([{ run: [0, 1] }, { run: [1, 3] }]), 3), 'runs merge');
  t.notOk(untouched(upstream, 3));
  const ours = { role: 'user', content: [{ type: 'tool_result', content: 'placeholder', cache_control: { type: 'ephemeral' } }] };
  t.same(
    followMarkers(ours, { role: 'user', content: [{ type: 'tool_result', content: 'original' }] }),
    {
      role: 'user',
      content: [{ type: 'tool_result', content: 'placeholder' }],
    },
    'a stale marker goes',
  );
  t.same(
    followMarkers(
      { role: 'user', content: [{ type: 'tool_result', content: 'p' }] },
      { role: 'user', content: [{ type: 'tool_result', content: 'o', cache_control: { type: 'ephemeral' } }] },
    ),
    { role: 'user', content: [{ type: 'tool_result', content: 'p', cache_control: { type: 'ephemeral' } }] },
    'the client’s marker comes',
  );
});

t.test('headers: credentials and provider headers pass, hop-by-hop and Compactor’s own do not', async (t) => {
  const out = upstreamRequestHeaders({
    'x-api-key': 'sk-ant-1',
    authorization: 'Bearer tok',
    'anthropic-beta': 'a,b',
    'x-stainless-os': 'Linux',
    connection: 'keep-alive, x-hop',
    'x-hop': '1',
    'keep-alive': 'timeout=5',
    host: 'localhost:8080',
    'content-length': '10',
    'transfer-encoding': 'chunked',
    'x-compactor-key': 'secret',
    'x-compactor-options': '{}',
  });
  t.same(Object.keys(out).sort(), ['anthropic-beta', 'authorization', 'x-api-key', 'x-stainless-os']);
  t.same(
    clientResponseHeaders({ 'Content-Type': 'text/event-stream', 'content-length': '5', connection: 'close', 'request-id': 'r' }),
    {
      'content-type': 'text/event-stream',
      'content-length': '5',
      'request-id': 'r',
    },
  );
  t.equal(credentialOf(PROVIDERS.anthropic, { authorization: 'Bearer oauth-token' }, new URLSearchParams()), 'oauth-token');
  t.equal(credentialOf(PROVIDERS.gemini, {}, new URLSearchParams('key=g-key&alt=sse')), 'g-key');
  const { sessionOf } = PROVIDERS.anthropic;
  t.equal(sessionOf({ 'x-claude-code-session-id': 's1' }, {}), 'x-claude-code-session-id:s1');
  t.equal(sessionOf({}, { prompt_cache_key: 'p' }), 'prompt_cache_key:p');
  t.equal(sessionOf({}, { metadata: { user_id: 'u' } }), 'user_id:u');
  t.equal(sessionOf({}, {}), undefined);
});

t.test('the upstream is configuration only: a path never moves the request to another origin', async (t) => {
  const up = new Upstreams({
    bases: { anthropic: 'https://api.anthropic.com', openai: 'http://127.0.0.1:9/base/', gemini: undefined },
    timeoutMs: 1000,
    connectTimeoutMs: 1000,
  });
  t.teardown(() => up.close());
  t.equal(up.url('anthropic', '/v1/messages?beta=true')?.toString(), 'https://api.anthropic.com/v1/messages?beta=true');
  t.equal(up.url('openai', '/v1/responses')?.toString(), 'http://127.0.0.1:9/base/v1/responses');
  t.equal(
    up.url('anthropic', '//evil.example/v1/messages')?.origin,
    'https://api.anthropic.com',
    'a path that looks like an authority stays a path',
  );
  t.equal(up.url('anthropic', '/@evil.example/x')?.origin, 'https://api.anthropic.com');
  t.equal(up.url('gemini', '/v1beta/models'), undefined, 'off');
  const gemini = PROVIDERS.gemini.reducible('POST', '/v1beta/models/gemini-3-pro:streamGenerateContent');
  t.match(gemini, { format: 'gemini', history: 'contents', pathModel: 'gemini-3-pro', pathStream: true });
  t.equal(gemini?.systemOf({ system_instruction: 'S' }), 'S', "Gemini's system field, either spelling");
  const tools = [{ type: 'function', function: { name: 'f' } }];
  const chat = PROVIDERS.openai.reducible('POST', '/v1/chat/completions');
  t.equal(chat?.systemOf({ tools, messages: [] }), undefined, "Chat's tools are not its system prompt");
  t.same(chat?.toolsOf({ tools, messages: [] }), tools, 'they are its tools');
  t.equal(PROVIDERS.openai.reducible('POST', '/v1/responses')?.systemOf({ instructions: 'I' }), 'I');
  t.equal(PROVIDERS.openai.keptUpstream({ previous_response_id: 'resp_1' }), 'previous_response_id');
  t.equal(PROVIDERS.openai.keptUpstream({}), undefined);
  t.equal(PROVIDERS.openai.reducible('GET', '/v1/responses'), undefined);
  t.ok(PROVIDERS.anthropic.reducible('POST', '/v1/messages/count_tokens')?.countOnly);
});

t.test('loading undici 7 for the proxy leaves Node’s own fetch working (the summarizer’s SDK uses it)', async (t) => {
  const { createServer } = await import('node:http');
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => server.close());
  const { port } = server.address() as { port: number };
  // Imported above, before any fetch: undici 7 would have installed its agent for Node's fetch,
  // which fails on it once a server closes a kept-alive connection (test/system/worker-pool.test.ts).
  const { Agent } = await import('../../src/proxy/undici.js');
  const global = (globalThis as Record<symbol, unknown>)[Symbol.for('undici.globalDispatcher.1')];
  t.notOk(global instanceof Agent, 'the global dispatcher is Node’s own, not undici 7’s');
  const res = await fetch(`http://127.0.0.1:${port}/`);
  t.equal(await res.text(), 'ok');
});
