import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { build, fakeLlm } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';
import { FakeOpenAI, gate } from '../support/fake-openai.js';

// Requests whose body reaches COMPACTOR_WORKER_MIN_BYTES run on a worker thread: parsed, validated,
// run and serialized there. Every answer must be the one the main thread gives for the same request.

const SECRET = { COMPACTOR_ARTIFACT_SECRET: 'the-same-secret-for-both-services-0123456789' };
const corpus = loadCorpus()
  .filter((c) => c.format === 'openai-chat' && c.bytes > 40_000 && c.bytes < 120_000)
  .slice(0, 2);
const anthropic = loadCorpus().find((c) => c.format === 'anthropic');

/** What differs by nature between two answers: the request id. */
const comparable = (body: string) => body.replace(/"request_id":"[^"]*"/g, '"request_id":"…"');

async function pair(t: Test, extra: Record<string, string> = {}): Promise<{ inline: FastifyInstance; worker: FastifyInstance }> {
  const inline = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_WORKERS: '0', ...SECRET, ...extra });
  const worker = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_WORKER_MIN_BYTES: '1', ...SECRET, ...extra });
  return { inline, worker };
}

t.test('a request on a worker answers exactly as on the main thread, for every endpoint', async (t) => {
  const { inline, worker } = await pair(t);
  const requests: { url: string; payload: object }[] = [];
  for (const c of corpus) {
    const base = { messages: c.messages, model: c.model ?? 'gpt-4o' };
    requests.push(
      { url: '/v1/window', payload: { ...base, keep: { runs: 1 } } },
      { url: '/v1/compact', payload: { ...base, keep_tool_uses: 2 } },
      { url: '/v1/compact', payload: { ...base, keep_tool_uses: 2, store: 'inline', clear_tool_inputs: true } },
      { url: '/v1/summarize', payload: { ...base, keep: { messages: 10 } } },
      { url: '/v1/summarize', payload: { ...base, mode: 'sections' } },
      { url: '/v1/fit', payload: { ...base, target_tokens: 8000 } },
      { url: '/v1/fit', payload: { ...base, target_tokens: 8000, dry_run: true } },
      { url: '/v1/tokens', payload: base },
      { url: '/v1/validate', payload: base },
    );
  }
  if (anthropic)
    requests.push({ url: '/v1/fit', payload: { messages: anthropic.messages, format: 'anthropic', target_tokens: 9000 } });
  for (const { url, payload } of requests) {
    const a = await inline.inject({ method: 'POST', url, payload });
    const b = await worker.inject({ method: 'POST', url, payload });
    t.equal(b.statusCode, a.statusCode, `${url}: same status`);
    t.equal(b.headers['content-type'], a.headers['content-type'], `${url}: same content type`);
    t.equal(comparable(b.body), comparable(a.body), `${url}: same body`);
  }
  // What the worker stored is there for the main thread (and the other way round).
  const compacted = (
    await worker.inject({ method: 'POST', url: '/v1/compact', payload: { messages: corpus[0]?.messages, keep_tool_uses: 1 } })
  ).json();
  const id = compacted.artifacts[0].id as string;
  t.equal(
    (await worker.inject({ method: 'GET', url: `/v1/artifacts/${id}` })).statusCode,
    200,
    'stored by the worker, read by the main thread',
  );
  const expanded = (await worker.inject({ method: 'POST', url: '/v1/expand', payload: { messages: compacted.messages } })).json();
  t.same(expanded.messages, corpus[0]?.messages, 'expand on the worker reads the store too');
  const metrics = (await worker.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_tokens_saved_total\{strategy="compact"\} [1-9]/, "the worker's report reaches the metrics");
  t.match(metrics, /compactor_artifacts_total\{kind="tool_result"\} [1-9]/);
});

t.test('bad input on a worker is the same problem as on the main thread', async (t) => {
  const { inline, worker } = await pair(t);
  const deep = `{"messages":[${'['.repeat(5000)}${']'.repeat(5000)}]}`;
  const cases: { name: string; payload: string }[] = [
    { name: 'invalid JSON', payload: '{"messages": [' },
    { name: 'forbidden key', payload: '{"messages":[{"role":"user","content":"x"}],"__proto__":{"a":1}}' },
    { name: 'too deep', payload: deep },
    { name: 'unknown option', payload: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], keep_tool_usess: 1 }) },
    { name: 'wrong type', payload: JSON.stringify({ messages: 'nope' }) },
    { name: 'malformed message', payload: JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] }) },
    { name: 'orphan result', payload: JSON.stringify({ messages: [{ role: 'tool', tool_call_id: 'c9', content: 'x' }] }) },
    { name: 'whitespace body', payload: '   ' },
  ];
  for (const c of cases) {
    const headers = { 'content-type': 'application/json' };
    const a = await inline.inject({ method: 'POST', url: '/v1/compact', payload: c.payload, headers });
    const b = await worker.inject({ method: 'POST', url: '/v1/compact', payload: c.payload, headers });
    t.equal(b.statusCode, a.statusCode, `${c.name}: ${a.statusCode}`);
    t.ok(a.statusCode >= 400 && a.statusCode < 500, `${c.name} is a client error`);
    t.equal(b.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.equal(comparable(b.body), comparable(a.body), `${c.name}: the same problem`);
    t.equal(b.json().request_id, b.headers['x-request-id'], `${c.name}: the problem names its request`);
  }
});

t.test('on a worker, with an LLM and an SQLite store the threads share: summaries, the cache, failures', async (t) => {
  const server = await fakeLlm(t);
  server.fallback = () => ({ content: '## Goal and constraints\nFix the bug.\n## Current state\nDone.' });
  const dir = mkdtempSync(join(tmpdir(), 'compactor-offload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const app = await build(t, {
    COMPACTOR_STORE_URL: `sqlite:${join(dir, 'store.db')}`,
    COMPACTOR_WORKER_MIN_BYTES: '1',
    OPENAI_BASE_URL: server.url,
    OPENAI_API_KEY: 'sk-test',
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    COMPACTOR_SUMMARIZER_TIMEOUT_MS: '2000',
    COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
  });
  const payload = { messages: corpus[0]?.messages, keep: { messages: 10 } };
  const first = (await app.inject({ method: 'POST', url: '/v1/summarize', payload })).json();
  t.equal(first.summary.summarizer, 'llm');
  t.equal(first.summary.cached, false);
  t.ok(first.usage.calls >= 1, 'the worker called the LLM');
  const again = (await app.inject({ method: 'POST', url: '/v1/summarize', payload })).json();
  t.equal(again.summary.cached, true, 'the summary cache, written by the worker to SQLite, is hit');
  t.equal(again.usage.calls, 0);
  const range = await app.inject({ method: 'GET', url: `/v1/artifacts/${first.summary.id}` });
  t.equal(range.statusCode, 200, "the main thread's own connection reads the range the worker stored");

  server.fallback = () => ({ fault: 'status', status: 500 });
  const failed = await app.inject({
    method: 'POST',
    url: '/v1/summarize',
    payload: { ...payload, keep: { messages: 12 }, on_failure: 'error' },
  });
  t.equal(failed.statusCode, 502, 'an upstream failure on a worker is the same 502');
  t.equal(failed.json().code, 'CMP_ERR_SUMMARIZER_UPSTREAM');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_summarizer_errors_total\{code="CMP_ERR_SUMMARIZER_UPSTREAM"\} 1/);
});

t.test('a key scopes what a worker stores and reads', async (t) => {
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKER_MIN_BYTES: '1',
    COMPACTOR_API_KEYS: 'key-a-0123456789ab,key-b-0123456789ab',
  });
  const compacted = (
    await app.inject({
      method: 'POST',
      url: '/v1/compact',
      payload: { messages: corpus[0]?.messages, keep_tool_uses: 1 },
      headers: { authorization: 'Bearer key-a-0123456789ab' },
    })
  ).json();
  const expand = (key: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/expand',
      payload: { messages: compacted.messages },
      headers: { authorization: `Bearer ${key}` },
    });
  t.same((await expand('key-a-0123456789ab')).json().missing, [], 'its own key restores everything');
  // Another key's placeholders do not verify under this key: they are text, and nothing is restored.
  const other = (await expand('key-b-0123456789ab')).json();
  t.equal(other.restored, 0, 'another key restores nothing');
  t.same(other.messages, compacted.messages, 'and gets the history back as it sent it');
});

t.test(
  'closing while a request is in flight: it is answered, and a keep-alive client does not hold the close open',
  async (t) => {
    const { listen } = await import('../support/net.js');
    const { buildApp } = await import('../../src/app.js');
    const { testConfig } = await import('../support/app.js');
    const { pino } = await import('pino');
    for (const workers of ['0', '1']) {
      const llm = await new FakeOpenAI().start();
      t.teardown(() => llm.stop());
      llm.fallback = () => ({ content: '## Goal and constraints\nFix.\n## Current state\nDone.', delayMs: 400 });
      const app = await buildApp(
        testConfig({
          COMPACTOR_STORE_URL: 'memory:',
          COMPACTOR_WORKERS: workers,
          COMPACTOR_WORKER_MIN_BYTES: '1',
          OPENAI_BASE_URL: llm.url,
          OPENAI_API_KEY: 'sk-test',
          COMPACTOR_SUMMARIZER_MODEL: 'small',
        }),
        { logger: pino({ level: 'silent' }) },
      );
      const { base } = await listen(app);
      // Fetch keeps its connections alive.
      await fetch(`${base}/health/live`);
      const inFlight = fetch(`${base}/v1/summarize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: corpus[0]?.messages, keep: { messages: 10 } }),
      });
      await new Promise((r) => setTimeout(r, 150));
      const started = performance.now();
      const closed = app.close();
      const res = await inFlight;
      t.equal(res.status, 200, `workers=${workers}: the request in flight is answered`);
      t.equal(res.headers.get('connection'), 'close', 'and its connection closed');
      await closed;
      // Far below the keep-alive timeout (72 s) that held the close open before, with room for a loaded CI machine.
      t.ok(performance.now() - started < 20_000, `workers=${workers}: closed in ${Math.round(performance.now() - started)} ms`);
    }
  },
);

t.test('a body light in bytes but heavy in messages is never parsed on the main thread', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_WORKER_MIN_BYTES: '262144' });
  const sent: number[] = [];
  const run = app.workerPool.run.bind(app.workerPool);
  app.workerPool.run = (url, body, request) => {
    sent.push(body.byteLength);
    return run(url, body, request);
  };
  // 8,000 messages in 250 kB, under the byte threshold: parsed, they weigh 1.5 MB.
  const messages = Array.from({ length: 8000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));
  const res = await app.inject({ method: 'POST', url: '/v1/window', payload: { messages, keep: { messages: 2 } } });
  t.equal(res.statusCode, 200);
  t.ok(res.json().messages.length < 10, 'windowed');
  t.equal(sent.length, 1, 'its raw bytes went to a worker');
  t.ok((sent[0] ?? 0) < 262_144, `${sent[0]} bytes, under COMPACTOR_WORKER_MIN_BYTES`);
  const few = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: messages.slice(0, 10) } });
  t.equal(few.statusCode, 200);
  t.equal(sent.length, 1, 'a small light body stays on the main thread');
});

t.test('while the one worker is busy, the main thread runs a heavy body itself, up to its bound', async (t) => {
  const server = await fakeLlm(t);
  const held = gate(t);
  let arrived = (): void => {};
  const onWorker = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  // The summary the worker asks for is held until the test opens the gate: the worker stays busy.
  server.fallback = () => {
    arrived();
    return { content: '## Goal and constraints\nFix the bug.', until: held.until };
  };
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKERS: '1',
    COMPACTOR_WORKER_MIN_BYTES: '4000',
    OPENAI_BASE_URL: server.url,
    OPENAI_API_KEY: 'sk-test',
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
  });
  const sent: number[] = [];
  const run = app.workerPool.run.bind(app.workerPool);
  app.workerPool.run = (...args: Parameters<typeof run>) => {
    sent.push(args[1].byteLength);
    return run(...args);
  };
  const history = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} ${'x'.repeat(120)}` }));
  const busy = app.inject({
    method: 'POST',
    url: '/v1/summarize',
    payload: { messages: history(40), keep: { messages: 4 }, on_failure: 'error' },
  });
  await onWorker;
  t.equal(sent.length, 1, 'the first heavy body went to the idle worker, which waits on the summarizer');
  // Heavy enough for a worker (over 4,000 bytes of weight), light enough for the main thread to spare (under 16,000).
  const spared = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: { messages: history(40), keep: { messages: 4 } },
  });
  t.equal(spared.statusCode, 200);
  t.equal(sent.length, 1, 'the second ran on the main thread while the worker was busy');
  const heavy = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: { messages: history(200), keep: { messages: 4 } },
  });
  t.equal(heavy.statusCode, 200);
  t.equal(sent.length, 2, 'a body over the bound goes to the worker all the same');
  t.ok((sent[1] ?? 0) > 16_000, `${sent[1]} bytes`);
  held.open();
  t.equal((await busy).statusCode, 200, 'the held request answers once its summary arrives');
  const after = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: { messages: history(40), keep: { messages: 4 } },
  });
  t.equal(after.statusCode, 200);
  t.equal(sent.length, 3, 'with the worker idle again, a heavy body goes to it');
});
