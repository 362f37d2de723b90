/**
 * The app on a real listening port, driven by a real HTTP client (global fetch): health, a window
 * request with a realistic OpenAI history, request ids, metrics, the OpenAPI document and the docs
 * UI, then draining and a graceful close.
 */
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { toolCall } from '../support/messages.js';
import { listen } from '../support/net.js';

async function start(): Promise<{ app: FastifyInstance; base: string; port: number }> {
  const app = await buildApp(testConfig(), { logger: pino({ level: 'silent' }) });
  return { app, ...(await listen(app)) };
}

const call = toolCall;

/** A coding agent's history: system prompt, three user runs, parallel tool calls and their results. */
const HISTORY = [
  { role: 'system', content: 'You are a careful coding agent. Use the tools; never guess file contents.' },
  { role: 'user', content: 'The test suite fails on main. Find out why and fix it.' },
  {
    role: 'assistant',
    content: 'Let me run the tests and look at the failing file.',
    tool_calls: [call('call_run', 'run_tests', { path: 'test/' }), call('call_read', 'read_file', { path: 'src/math.ts' })],
  },
  { role: 'tool', tool_call_id: 'call_run', content: 'FAIL test/math.test.ts\n  expected add(2, 2) to equal 4, got 5' },
  { role: 'tool', tool_call_id: 'call_read', content: 'export function add(a: number, b: number) {\n  return a + b + 1;\n}\n' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [call('call_edit', 'edit_file', { path: 'src/math.ts', find: 'a + b + 1', replace: 'a + b' })],
  },
  { role: 'tool', tool_call_id: 'call_edit', content: 'edited src/math.ts (1 line)' },
  { role: 'assistant', content: 'Fixed: `add` added one too many. The suite passes now.' },
  { role: 'user', content: 'Thanks. Add a test for negative numbers too.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [call('call_write', 'write_file', { path: 'test/math.test.ts', append: "it('adds negatives', ...)" })],
  },
  { role: 'tool', tool_call_id: 'call_write', content: 'wrote test/math.test.ts' },
  { role: 'assistant', content: 'Added a test for negative numbers.' },
  { role: 'user', content: 'Great, now open a pull request.' },
  { role: 'assistant', content: 'Opened PR #42: "Fix add() off-by-one and test negatives".' },
];

t.test('the service over a real port', async (t) => {
  const { app, base } = await start();
  t.teardown(() => app.close());

  await t.test('GET /health/live and /health/ready', async (t) => {
    const live = await fetch(`${base}/health/live`);
    t.equal(live.status, 200);
    t.same(await live.json(), { status: 'ok' });
    const ready = await fetch(`${base}/health/ready`);
    t.equal(ready.status, 200);
    t.same(await ready.json(), { status: 'ready' });
    t.ok(live.headers.get('x-request-id'), 'every response carries x-request-id');
  });

  await t.test('POST /v1/window with a realistic OpenAI history', async (t) => {
    const res = await fetch(`${base}/v1/window`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'agent-7.step-13' },
      body: JSON.stringify({ messages: HISTORY, model: 'gpt-4o', keep: { runs: 1 } }),
    });
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type') ?? '', /^application\/json/);
    t.equal(res.headers.get('x-request-id'), 'agent-7.step-13', 'the given x-request-id is echoed back');
    const body = (await res.json()) as {
      messages: unknown[];
      format: string;
      applied: boolean;
      tokens: { before: number; after: number; saved: number; counting: string; tokenizer: string };
      usage: { calls: number; total_tokens: number; model: string | null };
      actions: { index: number; action: string; tokens_freed: number }[];
      warnings: unknown[];
      dropped: { messages: number; runs: number; tokens: number; last_dropped_run_id: string | null };
    };
    t.equal(body.format, 'openai-chat');
    t.equal(body.applied, true);
    // head (system), the first user message (the task) and the newest run survive
    t.same(body.messages, [HISTORY[0], HISTORY[1], HISTORY[12], HISTORY[13]]);
    t.equal(body.dropped.messages, HISTORY.length - 4);
    t.equal(body.dropped.runs, 2, 'the first run (minus its task message) and the second run were dropped');
    t.equal(body.dropped.last_dropped_run_id, null, 'no run_ids were given');
    t.equal(body.actions.length, HISTORY.length, 'one action per input message');
    t.same(
      body.actions.map((a) => a.action),
      ['keep', 'keep', ...Array(10).fill('drop'), 'keep', 'keep'],
    );
    t.equal(body.tokens.counting, 'exact', 'gpt-4o is counted with its real tokenizer');
    t.equal(body.tokens.tokenizer, 'o200k_base');
    t.ok(body.tokens.saved > 0);
    t.equal(body.tokens.after, body.tokens.before - body.tokens.saved);
    t.equal(body.dropped.tokens, body.tokens.saved);
    t.same(body.usage, { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_input_tokens: 0, calls: 0, model: null });
    t.same(body.warnings, []);

    const generated = await fetch(`${base}/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: HISTORY }),
    });
    t.equal(generated.status, 200);
    t.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, 'without one, a UUID request id is generated');
  });

  await t.test('GET /metrics counts the window request by route', async (t) => {
    const res = await fetch(`${base}/metrics`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    t.match(text, /# TYPE compactor_http_requests_total counter/);
    const line = text.split('\n').find((l) => l.startsWith('compactor_http_requests_total{') && l.includes('route="/v1/window"'));
    t.ok(line, 'a compactor_http_requests_total series with route="/v1/window"');
    t.match(line ?? '', /method="POST"/);
    t.match(line ?? '', /status="200"/);
    t.match(line ?? '', / 1$/, 'counted once');
    t.match(text, /compactor_tokens_saved_total\{strategy="window"\} [1-9]/, 'tokens saved by the window');
  });

  await t.test('GET /openapi.json is an OpenAPI 3.1 document of the v1 endpoints', async (t) => {
    const res = await fetch(`${base}/openapi.json`);
    t.equal(res.status, 200);
    const doc = (await res.json()) as {
      openapi: string;
      info: { title: string };
      paths: Record<string, Record<string, unknown>>;
    };
    t.match(doc.openapi, /^3\.1\./);
    t.equal(doc.info.title, 'Compactor');
    for (const path of ['/v1/window', '/v1/tokens', '/v1/validate']) {
      t.ok(doc.paths[path]?.post, `${path} is documented as a POST`);
    }
  });

  await t.test('GET /docs serves the Swagger UI', async (t) => {
    const res = await fetch(`${base}/docs`);
    t.equal(res.status, 200, `answered 200 at ${res.url}`);
    t.match(res.headers.get('content-type') ?? '', /^text\/html/);
    t.match(await res.text(), /swagger/i);
  });

  await t.test('an unknown route is a problem+json 404 over the wire too', async (t) => {
    const res = await fetch(`${base}/v1/nothing-here`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    t.equal(res.status, 404);
    t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const body = (await res.json()) as { code: string; status: number; request_id: string };
    t.equal(body.code, 'CMP_ERR_ROUTE_NOT_FOUND');
    t.equal(body.status, 404);
    t.equal(body.request_id, res.headers.get('x-request-id'));
  });
});

/** Whether a TCP connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

t.test('ready means the worker pool is up: 503 starting while it warms; a close during the warm-up is quiet', async (t) => {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', LOG_LEVEL: 'info' }), { logger });
  t.teardown(() => app.close());
  await app.ready();
  t.equal(
    (await app.inject({ method: 'GET', url: '/health/ready' })).statusCode,
    200,
    'no warm-up asked: the pool starts on use',
  );
  const warming = app.workerPool.warm();
  const early = await app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(early.statusCode, 503, 'not ready while the pool starts');
  t.match(early.json(), { status: 'starting' });
  await warming;
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'ready once it is up');

  const second = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', LOG_LEVEL: 'info' }), { logger });
  await second.ready();
  const started = second.workerPool.warm();
  await second.close();
  await t.resolves(started, 'a warm-up cut short by a close does not fail');
  t.notMatch(lines.join(''), /"level":(50|60)/, 'nothing at error level');
});

t.test('draining, then a graceful close', async (t) => {
  const { app, base, port } = await start();
  let closed = false;
  t.teardown(async () => {
    if (!closed) await app.close();
  });

  t.equal((await fetch(`${base}/health/ready`)).status, 200, 'ready before draining');
  app.readiness.ready = false;
  const ready = await fetch(`${base}/health/ready`);
  t.equal(ready.status, 503, 'readiness turns 503 while draining');
  t.same(await ready.json(), { status: 'draining' });
  const live = await fetch(`${base}/health/live`);
  t.equal(live.status, 200, 'liveness stays 200 while draining');
  t.same(await live.json(), { status: 'ok' });
  const work = await fetch(`${base}/v1/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: HISTORY.slice(0, 2) }),
  });
  t.equal(work.status, 200, 'requests are still served while draining');

  await app.close();
  closed = true;
  t.equal(await refused(port), true, 'the port refuses new connections after close');
  await t.rejects(fetch(`${base}/health/live`), 'a new request fails after close');
});

t.test('a request in flight when close starts still completes', async (t) => {
  const { app, port } = await start();
  const body = JSON.stringify({ messages: HISTORY, keep: { runs: 1 } });
  const half = Math.floor(body.length / 2);
  const socket = connect({ host: '127.0.0.1', port });
  t.teardown(() => socket.destroy());
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const response = new Promise<string>((resolve) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => resolve(text));
    socket.on('close', () => resolve(text));
  });
  socket.write(
    `POST /v1/window HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
  );
  // let the server read the headers and the first half of the body before close starts
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closing = app.close();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(await refused(port), true, 'new connections are refused while closing');
  socket.write(body.slice(half));
  const raw = await response;
  await closing;
  t.match(raw, /^HTTP\/1\.1 200 /, 'the in-flight request got its 200');
  const json = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { applied: boolean; messages: unknown[] };
  t.equal(json.applied, true);
  t.equal(json.messages.length, 4);
});

t.test('a request whose client leaves while it waits for its turn is not run, and nothing is logged as an error', async (t) => {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = await buildApp(testConfig({ COMPACTOR_TOKEN_CACHE_ENTRIES: '0' }), { logger });
  t.teardown(() => app.close());
  const { port } = await listen(app);
  // A busy server, simulated in this process: every event-loop iteration spends 15 ms of CPU, as
  // heavy requests would. The queue starts one request per iteration, so 20 requests queue for
  // 300 ms or more. No step waits on a timer; each waits for the state it needs.
  let hogging = true;
  const hog = () => {
    const end = performance.now() + 15;
    while (performance.now() < end) {
      // CPU-bound work.
    }
    if (hogging) setImmediate(hog);
  };
  setImmediate(hog);
  t.teardown(() => {
    hogging = false;
  });
  const raw = (i: number) => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: `request ${i}` }] });
    return `POST /v1/tokens HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const until = async (what: string, ok: () => Promise<boolean>) => {
    for (let i = 0; i < 2000; i++) {
      if (await ok()) return;
      await new Promise((r) => setImmediate(r));
    }
    throw new Error(`timed out waiting until ${what}`);
  };
  const connections = () => new Promise<number>((r) => app.server.getConnections((_, n) => r(n)));
  // The queue's own state, read without a request (which would itself take iterations): requests
  // waiting, and requests that have had their turn.
  const metric =
    (name: string, sample = name) =>
    async () =>
      Number(
        (await app.metrics.registry.getSingleMetric(name)?.get())?.values.find(
          (v) => ((v as { metricName?: string }).metricName ?? name) === sample,
        )?.value,
      );
  const waiting = metric('compactor_queue_depth');
  const started = metric('compactor_queue_wait_seconds', 'compactor_queue_wait_seconds_count');
  const arrived = async () => (await waiting()) + (await started());
  const open = () => {
    const socket = connect(port, '127.0.0.1');
    const closed = new Promise<string>((resolve) => {
      let data = '';
      socket.on('data', (d) => {
        data += d;
      });
      socket.on('close', () => resolve(data));
      socket.on('error', () => resolve(data));
    });
    return { socket, closed };
  };
  // Every connection is accepted first (Node accepts one per event-loop iteration).
  const stay = Array.from({ length: 20 }, open);
  const leave = Array.from({ length: 10 }, open);
  await until('all 30 connections are accepted', async () => (await connections()) >= 30);
  for (const [i, { socket }] of stay.entries()) socket.write(raw(i));
  await until('the first 20 have arrived in the queue', async () => (await arrived()) >= 20);
  for (const [i, { socket }] of leave.entries()) socket.write(raw(100 + i));
  await until('10 more have arrived behind them', async () => (await arrived()) >= 30);
  const ahead = 20 - (await started());
  t.ok(ahead > 0, `they wait behind ${ahead} others`);
  for (const { socket } of leave) socket.destroy();
  const answers = await Promise.all(stay.map((s) => s.closed));
  await until('all 30 have had their turn', async () => (await started()) >= 30);
  hogging = false;
  t.ok(
    answers.every((a) => a.startsWith('HTTP/1.1 200')),
    'the clients that stayed got 200',
  );
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const abandoned = Number(/^compactor_queue_abandoned_total (\d+)/m.exec(metrics)?.[1]);
  t.equal(abandoned, 10, 'none of the requests whose client left was run');
  t.same(
    lines.filter((l) => l.level >= 50).map((l) => l.msg),
    [],
    'no error lines',
  );
});

t.test('closing does not wait for a connection that never sent a request (a client’s spare connection)', async (t) => {
  const { connect } = await import('node:net');
  const { buildApp } = await import('../../src/app.js');
  const { testConfig } = await import('../support/app.js');
  const { listen } = await import('../support/net.js');
  const { pino } = await import('pino');
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:' }), { logger: pino({ level: 'silent' }) });
  const { port } = await listen(app);
  const spare = connect(port, '127.0.0.1');
  await new Promise((resolve) => spare.once('connect', resolve));
  const gone = new Promise((resolve) => spare.once('close', resolve));
  let closed = false;
  const closing = app.close().then(() => {
    closed = true;
  });
  // Node would keep it until its headers timeout (60 s here); a generous hang detector, not a speed test.
  await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 30_000))]);
  t.ok(closed, 'the app closed while the spare connection was open');
  await gone;
  t.pass('and the spare connection was closed');
});
