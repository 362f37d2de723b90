import { request as httpRequest } from 'node:http';
import t from 'tap';
import { build } from '../support/app.js';
import { FakeOpenAI } from '../support/fake-openai.js';
import { listen } from '../support/net.js';

/** A history of about `bytes` bytes that summarization acts on. */
function history(bytes: number): unknown[] {
  const messages: unknown[] = [{ role: 'user', content: 'Fix the build.' }];
  for (let i = 0; JSON.stringify(messages).length < bytes; i++) {
    messages.push({ role: 'assistant', content: `step ${i}: ${'checked the build output and the failing target. '.repeat(20)}` });
    messages.push({ role: 'user', content: `go on with step ${i + 1}` });
  }
  return messages;
}

const gauge = async (app: { inject: (o: object) => Promise<{ body: string }> }, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await app.inject({ method: 'GET', url: '/metrics' })).body)?.[1]);

t.test(
  'bytes in flight: past the limit a request is refused with 503 and retry-after, then served once bytes are released',
  async (t) => {
    const llm = await new FakeOpenAI().start();
    t.teardown(() => llm.stop());
    llm.fallback = () => ({ content: '## Goal and constraints\nFix the build.\n## Current state\nWorking.', delayMs: 600 });
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_BODY_LIMIT: '200000',
      COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'sk-test',
      COMPACTOR_SUMMARIZER_MODEL: 'small',
    });
    const big = { messages: history(150_000), keep: { messages: 4 } };
    const slow = app.inject({ method: 'POST', url: '/v1/summarize', payload: big });
    // The first request holds its bytes while the LLM takes its time.
    for (let i = 0; i < 100 && (await gauge(app, 'compactor_inflight_bytes')) === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    t.ok((await gauge(app, 'compactor_inflight_bytes')) > 140_000, 'its bytes are in flight');
    const refused = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: history(150_000) } });
    t.equal(refused.statusCode, 503, 'a second large request would pass the limit');
    t.equal(refused.json().code, 'CMP_ERR_OVERLOADED');
    t.ok(Number(refused.headers['retry-after']) >= 1, `retry-after ${refused.headers['retry-after']}`);
    const small = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: history(2000) } });
    t.equal(small.statusCode, 200, 'a small one still fits');
    t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'health is never refused');
    t.equal((await slow).statusCode, 200, 'the first is served');
    t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'every byte is released');
    t.equal(await gauge(app, 'compactor_admission_refused_total'), 1);
    const again = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: history(150_000) } });
    t.equal(again.statusCode, 200, 'the refused request is served when retried');
  },
);

t.test('one request as large as the body limit always runs, even with a limit that fits only it', async (t) => {
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_BODY_LIMIT: '200000',
    COMPACTOR_MAX_INFLIGHT_BYTES: '200000',
  });
  const messages = [
    { role: 'user', content: 'Read the log.' },
    { role: 'assistant', content: `the log: ${'line of output '.repeat(13_000)}` },
  ];
  const res = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages } });
  t.equal(res.statusCode, 200);
});

/** `count` messages of a few bytes each: the shape whose parsed size dwarfs its bytes. */
const tiny = (count: number) => Array.from({ length: count }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));

t.test(
  'many tiny messages: past COMPACTOR_MAX_MESSAGES, or heavier alone than the in-flight limit, 413 naming the field',
  async (t) => {
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_BODY_LIMIT: '200000',
      COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
      COMPACTOR_MAX_MESSAGES: '1000',
    });
    // With the worker pool's shedding on (the default; tests turn it off), its meter reads what admission's returns: admission's refusal
    // must reach the server through it (it once was an unhandled error that ended the process).
    const pooled = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_WORKERS: '1',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '60000',
      COMPACTOR_BODY_LIMIT: '200000',
      COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
      COMPACTOR_MAX_MESSAGES: '1000',
    });
    const { port } = await listen(app);
    const { port: pooledPort } = await listen(pooled);
    for (const [where, at] of [
      ['', port],
      [', worker pool', pooledPort],
    ] as const) {
      for (const chunked of [false, true]) {
        const over = await post(at, '/v1/window', JSON.stringify({ messages: tiny(1001), keep: { messages: 2 } }), chunked);
        t.equal(over.status, 413, `1,001 messages${chunked ? ', chunked' : ''}${where}: 413`);
        t.match(JSON.parse(over.body), { code: 'CMP_ERR_REQUEST_TOO_MANY_MESSAGES', errors: [{ path: 'messages' }] });
        t.match(over.headers['content-type'], /application\/problem\+json/);
      }
    }
    t.equal(
      (await post(pooledPort, '/v1/window', JSON.stringify({ messages: tiny(10), keep: { messages: 2 } }), false)).status,
      200,
      'the pooled service still answers',
    );
    const gemini = await post(
      port,
      '/v1/window',
      JSON.stringify({
        format: 'gemini',
        messages: Array.from({ length: 1001 }, () => ({ role: 'user', parts: [{ text: 'x' }] })),
      }),
      false,
    );
    t.match(
      JSON.parse(gemini.body),
      { code: 'CMP_ERR_REQUEST_TOO_MANY_MESSAGES', errors: [{ path: 'messages' }] },
      'Gemini, counted in its own shapes',
    );
    t.equal((await post(port, '/v1/window', JSON.stringify({ messages: tiny(1000), keep: { messages: 2 } }), false)).status, 200);

    // 4,000 messages in 130 kB: under the body limit, but parsed they cost what 800 kB of text does.
    const uncapped = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_BODY_LIMIT: '200000',
      COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
    });
    const heavy = await uncapped.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: tiny(4000) } });
    t.equal(heavy.statusCode, 413, 'heavier alone than the in-flight limit');
    t.match(heavy.json(), { code: 'CMP_ERR_REQUEST_TOO_MANY_MESSAGES', errors: [{ path: 'messages' }] });
    t.match(heavy.json().detail, /COMPACTOR_MAX_INFLIGHT_BYTES/);
    t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'nothing stays reserved');
  },
);

/** One assistant message of `count` tool calls, each answered: few messages, most objects inside one. */
function toolCalls(count: number): unknown[] {
  const calls = Array.from({ length: count }, (_, i) => ({
    id: `c${i}`,
    type: 'function',
    function: { name: 'bash', arguments: '{}' },
  }));
  return [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: calls },
  ];
}

t.test('tool calls and content blocks weigh like messages: many in one message are refused by weight, naming them', async (t) => {
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKERS: '0',
    COMPACTOR_BODY_LIMIT: '200000',
    COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
  });
  // 1,500 tool calls in 110 kB: two messages, but modelled one by one they cost what 1,500 messages do.
  const calls = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: toolCalls(1500) } });
  t.equal(calls.statusCode, 413, 'heavier alone than the in-flight limit');
  t.match(calls.headers['content-type'], /application\/problem\+json/);
  t.match(calls.json(), { code: 'CMP_ERR_REQUEST_TOO_MANY_MESSAGES', errors: [{ path: 'messages' }] });
  t.match(calls.json().detail, /1500 content blocks and tool calls/);
  const parts = Array.from({ length: 2500 }, () => ({ type: 'text', text: 'x' }));
  const anthropic = await app.inject({
    method: 'POST',
    url: '/v1/tokens',
    payload: { format: 'anthropic', messages: [{ role: 'user', content: parts }] },
  });
  t.equal(anthropic.statusCode, 413, 'content parts of one message, Anthropic');
  t.match(anthropic.json().detail, /2500 content blocks/);
  const fewer = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: toolCalls(300) } });
  t.equal(fewer.statusCode, 200, 'fewer calls are served');
  t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'nothing stays reserved');
});

t.test('messages weigh in the bytes in flight: a small body of many messages waits for a large one', async (t) => {
  const llm = await new FakeOpenAI().start();
  t.teardown(() => llm.stop());
  llm.fallback = () => ({ content: '## Goal and constraints\nFix the build.\n## Current state\nWorking.', delayMs: 600 });
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKERS: '0',
    COMPACTOR_BODY_LIMIT: '200000',
    COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'sk-test',
    COMPACTOR_SUMMARIZER_MODEL: 'small',
  });
  const slow = app.inject({
    method: 'POST',
    url: '/v1/summarize',
    payload: { messages: history(150_000), keep: { messages: 4 } },
  });
  for (let i = 0; i < 100 && (await gauge(app, 'compactor_inflight_bytes')) === 0; i++)
    await new Promise((r) => setTimeout(r, 10));
  // 600 messages in 19 kB: its bytes fit beside the first, its weight (about 115 kB) does not.
  const many = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: tiny(600) } });
  t.equal(many.statusCode, 503);
  t.equal(many.json().code, 'CMP_ERR_OVERLOADED');
  t.ok(Number(many.headers['retry-after']) >= 1);
  t.equal((await slow).statusCode, 200);
  const again = await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: tiny(600) } });
  t.equal(again.statusCode, 200, 'served once the first is done');
  t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'every byte is released');
});

t.test('the limit may not be under the body limit: a configuration error', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.throws(
    () => loadConfig({ COMPACTOR_BODY_LIMIT: '300000', COMPACTOR_MAX_INFLIGHT_BYTES: '200000' }),
    /COMPACTOR_MAX_INFLIGHT_BYTES/,
  );
});

t.test('over a real socket: chunked bodies are counted as they arrive; a client that leaves releases its bytes', async (t) => {
  const llm = await new FakeOpenAI().start();
  t.teardown(() => llm.stop());
  llm.fallback = () => ({ content: '## Goal and constraints\nFix.\n## Current state\nWorking.', delayMs: 2000 });
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKERS: '0',
    COMPACTOR_BODY_LIMIT: '200000',
    COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'sk-test',
    COMPACTOR_SUMMARIZER_MODEL: 'small',
    COMPACTOR_SUMMARIZER_TIMEOUT_MS: '5000',
    COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
  });
  const { port } = await listen(app);
  const send = (payload: object, chunked: boolean) => {
    const body = Buffer.from(JSON.stringify(payload));
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/summarize',
      headers: chunked
        ? { 'content-type': 'application/json' }
        : { 'content-type': 'application/json', 'content-length': body.length },
    });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
    });
    if (chunked) {
      for (let i = 0; i < body.length; i += 16_384) req.write(body.subarray(i, i + 16_384));
      req.end();
    } else req.end(body);
    return { req, answer };
  };
  const first = send({ messages: history(150_000), keep: { messages: 4 } }, true);
  first.answer.catch(() => {}); // destroyed below: its answer never comes
  for (let i = 0; i < 200 && (await gauge(app, 'compactor_inflight_bytes')) < 140_000; i++)
    await new Promise((r) => setTimeout(r, 10));
  t.ok((await gauge(app, 'compactor_inflight_bytes')) >= 140_000, 'a chunked body is counted');
  const second = send({ messages: history(150_000), keep: { messages: 4 } }, true);
  const refused = await second.answer;
  t.equal(refused.status, 503, 'a chunked body that passes the limit is refused as its bytes arrive');
  t.match(refused.body, /CMP_ERR_OVERLOADED/);
  first.req.destroy();
  for (let i = 0; i < 300 && (await gauge(app, 'compactor_inflight_bytes')) > 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'a client that went away released its bytes');
});

/** POSTs `payload` over a real socket, chunked (no content-length) or not; resolves with status, headers and body. */
function post(port: number, path: string, payload: string, chunked: boolean) {
  const body = Buffer.from(payload);
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    headers: chunked
      ? { 'content-type': 'application/json' }
      : { 'content-type': 'application/json', 'content-length': body.length },
  });
  const answer = new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
  });
  if (chunked) {
    for (let i = 0; i < body.length; i += 16_384) req.write(body.subarray(i, i + 16_384));
    req.end();
  } else req.end(body);
  return answer;
}

t.test('a chunked body bound for a saturated worker pool is shed as its bytes arrive, as one with a length is', async (t) => {
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_WORKER_MIN_BYTES: '100000',
    COMPACTOR_MAX_QUEUE_WAIT_MS: '50',
  });
  const { port } = await listen(app);
  // The pool's queue as it would be under load: a request would wait 10 s for a worker.
  app.workerPool.expectedWaitMs = () => 10_000;
  const large = JSON.stringify({ messages: history(150_000) });
  for (const chunked of [false, true]) {
    const res = await post(port, '/v1/tokens', large, chunked);
    t.equal(res.status, 503, `${chunked ? 'chunked' : 'with a length'}: shed`);
    t.match(res.body, /CMP_ERR_OVERLOADED/);
    t.ok(Number(res.headers['retry-after']) >= 1, 'with retry-after');
  }
  const small = await post(port, '/v1/tokens', JSON.stringify({ messages: history(2000) }), true);
  t.equal(small.status, 200, 'a small chunked body runs on the main thread: not shed');
});

t.test(
  'a request refused while its body arrives gives back the room its weight took: one growing beside it is admitted',
  async (t) => {
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_WORKERS: '0',
      COMPACTOR_BODY_LIMIT: '200000',
      COMPACTOR_MAX_INFLIGHT_BYTES: '250000',
    });
    const { port } = await listen(app);
    // 800 tool uses in one message: about 40 kB of bytes, about 180 kB of weight.
    const uses = Array.from({ length: 800 }, (_, i) => ({ type: 'tool_use', id: `t${i}`, name: 'b', input: {} }));
    const body = Buffer.from(
      JSON.stringify({
        format: 'anthropic',
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: uses },
        ],
      }),
    );
    const half = Math.floor(body.length / 2);
    const open = () => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/tokens',
        headers: { 'content-type': 'application/json' },
      });
      const answer = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      return { req, answer };
    };
    const until = async (name: string, atLeast: number) => {
      for (let i = 0; i < 500 && (await gauge(app, name)) < atLeast; i++) await new Promise((r) => setTimeout(r, 10));
      t.ok((await gauge(app, name)) >= atLeast, `${name} reached ${atLeast}`);
    };
    const first = open();
    first.req.write(body.subarray(0, half));
    await until('compactor_inflight_bytes', 80_000);
    const second = open();
    second.req.write(body.subarray(0, half));
    await until('compactor_inflight_bytes', 170_000);
    // The first's second half takes the weight in flight past the limit: refused, but its body is not over.
    first.req.write(body.subarray(half, body.length - 1));
    await until('compactor_admission_refused_total', 1);
    second.req.end(body.subarray(half));
    t.equal(await second.answer, 200, 'the second fits once the first holds only its bytes');
    first.req.end(body.subarray(body.length - 1));
    t.equal(await first.answer, 503, 'the first was refused');
    for (let i = 0; i < 100 && (await gauge(app, 'compactor_inflight_bytes')) > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    t.equal(await gauge(app, 'compactor_inflight_bytes'), 0, 'every byte is released');
  },
);
