import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { build } from '../support/app.js';
import { FakeOpenAI } from '../support/fake-openai.js';

/**
 * `/v1/expand` is weighed by what it will answer, not only by what it is sent (issue 29): the
 * originals it restores count against `COMPACTOR_EXPAND_MAX_BYTES` (413 past it) and against the
 * bytes in flight (`COMPACTOR_MAX_INFLIGHT_BYTES`, 503 with retry-after past it).
 */

type Message = Record<string, unknown>;

const call = (id: string, command: string): Message => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
});
const result = (id: string, content: string): Message => ({ role: 'tool', tool_call_id: id, content });
/** A distinct output of about `bytes` bytes. */
const output = (label: string, bytes: number) =>
  `${label}\n${`${label}: line of output\n`.repeat(Math.ceil(bytes / (label.length + 17)))}`;

/** A chat history whose first `sizes.length` tool results are large, then a short last exchange. */
function history(sizes: readonly number[]): Message[] {
  return [
    { role: 'system', content: 'You are a build agent.' },
    { role: 'user', content: 'Build the project.' },
    ...sizes.flatMap((bytes, i) => [call(`c${i}`, `make part${i}`), result(`c${i}`, output(`part${i}`, bytes))]),
    call('last', 'echo done'),
    result('last', 'done'),
    { role: 'assistant', content: 'Done.' },
  ];
}

async function compact(t: Test, app: FastifyInstance, messages: Message[]): Promise<Message[]> {
  const res = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages, keep_tool_uses: 1 } });
  t.equal(res.statusCode, 200, 'compacted');
  return res.json().messages;
}

const gauge = async (app: FastifyInstance, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await app.inject({ method: 'GET', url: '/metrics' })).body)?.[1]);

t.test(
  'an expand that would restore more than COMPACTOR_EXPAND_MAX_BYTES is a 413 naming it; one under it is byte-exact',
  async (t) => {
    const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_EXPAND_MAX_BYTES: '1000000' });
    const big = history([600_000, 600_000]);
    const refused = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: await compact(t, app, big) } });
    t.equal(refused.statusCode, 413, 'two originals of 600 kB are over the cap');
    t.match(refused.headers['content-type'], /application\/problem\+json/);
    t.match(refused.json(), { code: 'CMP_ERR_EXPAND_TOO_LARGE', detail: /COMPACTOR_EXPAND_MAX_BYTES=1000000/ });
    const small = history([300_000, 300_000]);
    const ok = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: await compact(t, app, small) } });
    t.equal(ok.statusCode, 200);
    t.same(ok.json().messages, small, 'expand(compact(x)) == x');
    t.equal(ok.json().restored, 2);
  },
);

t.test('the originals an expand restores count against the bytes in flight: 503 with retry-after past the limit', async (t) => {
  const llm = await new FakeOpenAI().start();
  t.teardown(() => llm.stop());
  llm.fallback = () => ({ content: '## Goal and constraints\nBuild.\n## Current state\nWorking.', delayMs: 800 });
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKERS: '0',
    COMPACTOR_BODY_LIMIT: '2000000',
    COMPACTOR_MAX_INFLIGHT_BYTES: '2500000',
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'sk-test',
    COMPACTOR_SUMMARIZER_MODEL: 'small',
  });
  const original = history([1_500_000]);
  const compacted = await compact(t, app, original);
  t.ok(JSON.stringify(compacted).length < 10_000, 'the compacted history is small');
  // A summary of 1.2 MB holds its bytes while the summarizer takes its time.
  const chat = [{ role: 'user', content: 'Go.' }];
  for (let i = 0; JSON.stringify(chat).length < 1_200_000; i++) {
    chat.push({ role: 'assistant', content: `step ${i}: ${'looked at the build output again. '.repeat(30)}` });
    chat.push({ role: 'user', content: `go on with ${i + 1}` });
  }
  const slow = app.inject({ method: 'POST', url: '/v1/summarize', payload: { messages: chat, keep: { messages: 4 } } });
  for (let i = 0; i < 200 && (await gauge(app, 'compactor_inflight_bytes')) < 1_000_000; i++)
    await new Promise((r) => setTimeout(r, 10));
  t.ok((await gauge(app, 'compactor_inflight_bytes')) >= 1_000_000, 'the summary is in flight');
  const refused = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: compacted } });
  t.equal(refused.statusCode, 503, 'restoring 1.5 MB would pass the limit of 2.5 MB in flight');
  t.equal(refused.json().code, 'CMP_ERR_OVERLOADED');
  t.ok(Number(refused.headers['retry-after']) >= 1, `retry-after ${refused.headers['retry-after']}`);
  t.equal((await slow).statusCode, 200);
  t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'every byte is released');
  const served = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: compacted } });
  t.equal(served.statusCode, 200, 'served once the bytes are released');
  t.same(served.json().messages, original, 'byte-exact');
  t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'the restored bytes are released with the answer');
});

t.test('a body repeating one placeholder 100 times does not answer 100 copies of its original', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const compacted = await compact(t, app, history([1024 * 1024]));
  const pair = compacted.slice(2, 4);
  t.match(pair[1]?.content, /^\[compactor:art_/, 'the placeholder of the 1 MiB result');
  const body = { messages: [...compacted.slice(0, 2), ...Array.from({ length: 100 }, () => pair).flat(), ...compacted.slice(4)] };
  t.ok(JSON.stringify(body).length < 100_000, 'a small body');
  const res = await app.inject({ method: 'POST', url: '/v1/expand', payload: body });
  t.equal(res.statusCode, 200);
  t.ok(res.body.length < 2 * 1024 * 1024, `answered ${res.body.length} bytes`);
  t.equal(res.json().restored, 1, 'the placeholder restores once, into its own call');
  t.same(res.json().messages[3], history([1024 * 1024])[3], 'the first copy is the original');
  t.same(res.json().messages[5], pair[1], 'the others stay as they are');
  t.match(res.json().warnings, [{ code: 'placeholder_not_verified' }]);
});
