import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { FakeProvider, type JsonObject, redactHeaders, redactUrl } from '../support/fake-provider.js';
import { parseSse } from '../support/provider/sse.js';

// The fake model provider (test/support/fake-provider.ts) over real HTTP: recording, the
// prompt-cache simulation, every wire's endpoints, and its faults.

async function provider(t: Pick<Test, 'teardown'>): Promise<FakeProvider> {
  const p = await new FakeProvider().start();
  t.teardown(() => p.stop());
  return p;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

const bash = {
  name: 'Bash',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

t.test(
  'Anthropic streaming: a scripted tool call, recorded with headers, raw body and timing; the cache reads the last prefix',
  async (t) => {
    const p = await provider(t);
    const messages = [{ role: 'user', content: 'go' }];
    const body = { model: 'claude-x', max_tokens: 10, stream: true, tools: [bash], messages };
    const res = await post(`${p.url}/v1/messages?beta=true`, body, {
      'x-api-key': 'sk-ant-secret-123456',
      'x-claude-code-session-id': 's1',
    });
    t.equal(res.headers.get('content-type'), 'text/event-stream');
    t.equal(res.headers.get('request-id'), 'req_fake_0');
    const events = parseSse(await res.text());
    t.equal(events[0]?.event, 'message_start');
    t.equal(events.at(-1)?.event, 'message_stop');
    t.match(events.find((e) => e.event === 'content_block_start' && e.data.includes('tool_use'))?.data, /"name":"Bash"/);
    const [r] = p.requests;
    t.match(r, {
      seq: 0,
      method: 'POST',
      url: '/v1/messages?beta=true',
      path: '/v1/messages',
      wire: 'anthropic',
      endpoint: 'model',
      status: 200,
    });
    t.equal(r?.raw.toString(), JSON.stringify(body), 'the raw bytes as sent');
    t.same(r?.json, body);
    t.ok((r?.timing.endMs ?? -1) >= (r?.timing.headersMs ?? 0), 'timing recorded');
    t.equal(redactHeaders(r?.headers ?? {})['x-api-key'], '<redacted>');
    t.equal(
      redactUrl('/v1beta/models/g:generateContent?key=AIzaSecret&alt=sse'),
      '/v1beta/models/g:generateContent?key=<redacted>&alt=sse',
    );

    const next = {
      ...body,
      stream: false,
      messages: [...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }],
    };
    const json = (await (await post(`${p.url}/v1/messages`, next, { 'x-claude-code-session-id': 's1' })).json()) as JsonObject;
    const usage = json.usage as JsonObject;
    t.ok((usage.cache_read_input_tokens as number) > 0, 'the second call reads the first call’s prefix');
    t.equal(p.requests[1]?.cache?.brokeAtSegment, -1, 'nothing broke: the history only grew');
    await post(
      `${p.url}/v1/messages`,
      { ...next, messages: [{ role: 'user', content: 'rewritten' }] },
      { 'x-claude-code-session-id': 's1' },
    );
    t.equal(p.requests[2]?.cache?.brokeAtSegment, 2, 'a rewritten first message breaks the prefix at its segment');
    t.equal(p.modelRequests().length, 3);
  },
);

t.test(
  'count_tokens, Chat Completions, Responses and Gemini answer in their own shapes; a pluggable scenario decides',
  async (t) => {
    const p = await provider(t);
    p.scenario = (req) => ({ text: `seen ${req.wire} ${req.model} with ${req.history.length} items` });
    const count = (await (
      await post(`${p.url}/v1/messages/count_tokens`, { model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    ).json()) as JsonObject;
    t.ok(typeof count.input_tokens === 'number' && count.input_tokens > 0);
    const chat = (await (
      await post(`${p.url}/v1/chat/completions`, { model: 'gpt', messages: [{ role: 'user', content: 'hi' }] })
    ).json()) as JsonObject;
    t.match(chat, { object: 'chat.completion', choices: [{ message: { content: 'seen openai-chat gpt with 1 items' } }] });
    const responses = await post(`${p.url}/v1/responses`, { model: 'gpt', input: 'hi', stream: true });
    const completed = parseSse(await responses.text()).at(-1);
    t.equal(completed?.event, 'response.completed');
    const gemini = (await (
      await post(`${p.url}/v1beta/models/gemini-pro:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })
    ).json()) as JsonObject;
    t.match(gemini, {
      candidates: [{ content: { parts: [{ text: 'seen gemini gemini-pro with 1 items' }] } }],
      usageMetadata: { promptTokenCount: Number },
    });
    const array = await post(`${p.url}/v1beta/models/g:streamGenerateContent`, { contents: [] });
    t.equal(array.headers.get('content-type'), 'application/json');
    t.ok(Array.isArray(JSON.parse(await array.text())), 'the JSON-array stream form');
    const sse = await post(`${p.url}/v1beta/models/g:streamGenerateContent?alt=sse`, { contents: [] });
    t.match(parseSse(await sse.text()).at(-1)?.data, /"finishReason":"STOP"/);
    const unknown = await fetch(`${p.url}/v1/models`);
    t.equal(unknown.status, 404);
    t.equal(p.requests.at(-1)?.endpoint, 'other', 'an unknown path is recorded too');
    const bad = await fetch(`${p.url}/v1/responses`, { method: 'POST', body: '{not json' });
    t.equal(bad.status, 400);
    t.match(await bad.json(), { error: { type: 'invalid_request_error' } });
  },
);

t.test('a compressed request body is decoded for the record, its raw bytes kept', async (t) => {
  const p = await provider(t);
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(1000) }] });
  const raw = gzipSync(body);
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: raw,
  });
  t.equal(res.status, 200);
  t.same(p.requests[0]?.raw, raw);
  t.same(p.requests[0]?.json, JSON.parse(body));
});

t.test('status faults carry each provider’s error shape and retry-after; a delay comes before the headers', async (t) => {
  const p = await provider(t);
  p.enqueue(
    { fault: { kind: 'status', status: 429, retryAfter: 7 } },
    { fault: { kind: 'status', status: 500, message: 'boom' } },
    { fault: { kind: 'status', status: 503 } },
    { delayMs: 150, text: 'late' },
  );
  const anthropic = await post(`${p.url}/v1/messages`, { model: 'm', messages: [] });
  t.equal(anthropic.status, 429);
  t.equal(anthropic.headers.get('retry-after'), '7');
  t.same(await anthropic.json(), { type: 'error', error: { type: 'rate_limit_error', message: 'scripted failure' } });
  const openai = await post(`${p.url}/v1/responses`, { model: 'm', input: [] });
  t.same(await openai.json(), { error: { message: 'boom', type: 'server_error', param: null, code: null } });
  const gemini = await post(`${p.url}/v1beta/models/g:generateContent`, { contents: [] });
  t.same(await gemini.json(), { error: { code: 503, message: 'scripted failure', status: 'UNAVAILABLE' } });
  await post(`${p.url}/v1/chat/completions`, { model: 'm', messages: [] });
  t.ok((p.requests[3]?.timing.headersMs ?? 0) >= 140, 'the headers waited for the delay');
});

/** Reads a streamed body until `events` SSE events arrived; then whether the stream ended, erred or stalled. */
async function readEvents(
  res: Response,
  events: number,
  waitMs: number,
): Promise<{ seen: number; after: 'end' | 'error' | 'stall' }> {
  const reader = res.body?.getReader();
  if (!reader) throw new Error('no body');
  let text = '';
  const decoder = new TextDecoder();
  const next = async (): Promise<'more' | 'end'> => {
    const { done, value } = await reader.read();
    if (done) return 'end';
    text += decoder.decode(value, { stream: true });
    return 'more';
  };
  while (parseSse(text).length < events) if ((await next()) === 'end') return { seen: parseSse(text).length, after: 'end' };
  const timer = new Promise<'stall'>((resolve) => setTimeout(() => resolve('stall'), waitMs));
  const rest = async (): Promise<'end'> => {
    while ((await next()) === 'more') {
      // keep reading
    }
    return 'end';
  };
  const outcome = await Promise.race([rest().catch(() => 'error' as const), timer]);
  await reader.cancel().catch(() => undefined);
  return { seen: parseSse(text).length, after: outcome };
}

t.test('a stall stops after N events and keeps the answer open; a reset cuts the connection after N events', async (t) => {
  const p = await provider(t);
  p.enqueue(
    { text: 'a'.repeat(200), fault: { kind: 'stall', afterEvents: 3 } },
    { text: 'a'.repeat(200), fault: { kind: 'reset', afterEvents: 4 } },
  );
  const body = { model: 'm', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] };
  const stalled = await readEvents(await post(`${p.url}/v1/messages`, body), 3, 300);
  t.same(stalled, { seen: 3, after: 'stall' });
  const reset = await readEvents(await post(`${p.url}/v1/messages`, body), 4, 5000);
  t.same(reset, { seen: 4, after: 'error' });
});

t.test('a very large streamed answer arrives whole, generated as it is written', async (t) => {
  const p = await provider(t);
  const bytes = 8 * 1024 * 1024;
  p.enqueue({ text: { bytes } });
  const res = await post(`${p.url}/v1/chat/completions`, { model: 'm', stream: true, messages: [] });
  let received = 0;
  let text = 0;
  let tail = '';
  for await (const chunk of res.body ?? []) {
    const s = tail + Buffer.from(chunk).toString('utf8');
    const frames = s.split('\n\n');
    tail = frames.pop() ?? '';
    received += chunk.byteLength;
    for (const f of frames)
      if (f !== 'data: [DONE]')
        text += ((JSON.parse(f.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
          .length;
  }
  t.equal(text, bytes, 'every byte of the text');
  t.ok(received > bytes);
});
