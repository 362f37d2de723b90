/**
 * Errors Fastify and Node answer before any route runs, over a real socket (`inject` skips the
 * HTTP parser): each is problem+json with a `CMP_ERR_…` code and a request id, like every other
 * error. Also a slow client (408 while others are served), a stalled body, a client that leaves
 * mid-body, and requests that arrive while the service closes.
 */
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses every response in `raw` (a connection's whole output). */
function answers(raw: string): Answer[] {
  const out: Answer[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const [line = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    const body = Buffer.from(rest.slice(end + 4))
      .subarray(0, length)
      .toString();
    out.push({ status: Number(line.split(' ')[1]), headers, body });
    rest = Buffer.from(rest.slice(end + 4))
      .subarray(length)
      .toString();
  }
  return out;
}

/** Writes `chunks` to a fresh connection (a function is awaited between them) and reads until it closes. */
function exchange(port: number, ...chunks: (string | (() => Promise<unknown>))[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      data += d;
    });
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    socket.once('connect', async () => {
      for (const chunk of chunks) {
        if (typeof chunk === 'string') socket.write(chunk);
        else await chunk();
      }
    });
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}

async function start(overrides: Parameters<typeof testConfig>[0] = {}) {
  const lines: { level: number; msg: string; code?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', ...overrides }), { logger });
  const { port } = await listen(app);
  return { app, port, lines };
}

/** The expectations every problem answer meets. */
function problem(t: Test, answer: Answer | undefined, status: number, code: string): Record<string, unknown> {
  t.equal(answer?.status, status, `status ${status}`);
  t.match(answer?.headers['content-type'] ?? '', /^application\/problem\+json/);
  const body = JSON.parse(answer?.body ?? '{}') as Record<string, unknown>;
  t.equal(body.code, code);
  t.equal(body.status, status);
  t.match(body.request_id, /^[\w.:-]+$/);
  t.equal(body.request_id, answer?.headers['x-request-id'], 'the request id, in the body and the header');
  return body;
}

t.test("the router's and the HTTP parser's errors are problem+json", async (t) => {
  const { app, port, lines } = await start();
  t.teardown(() => app.close());
  const ask = async (text: string) => answers(await exchange(port, text))[0];

  const badUrl = await ask('GET /v1/%zz HTTP/1.1\r\nhost: x\r\nx-request-id: agent-1.step-2\r\nconnection: close\r\n\r\n');
  const body = problem(t, badUrl, 400, 'CMP_ERR_REQUEST_INVALID_URL');
  t.equal(body.request_id, 'agent-1.step-2', "the client's request id, when the headers could be read");
  t.notMatch(JSON.stringify(body), /%zz/, 'the URL is not echoed');
  problem(
    t,
    await ask(`GET /v1/artifacts/${'a'.repeat(200)} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`),
    414,
    'CMP_ERR_REQUEST_URI_TOO_LONG',
  );
  problem(t, await ask(`GET /v1/${'a'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`), 414, 'CMP_ERR_REQUEST_URI_TOO_LONG');
  problem(
    t,
    await ask(`GET /health/live HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`),
    431,
    'CMP_ERR_REQUEST_HEADERS_TOO_LARGE',
  );
  const badLength = await ask(
    'POST /v1/tokens HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ten\r\n\r\n{}',
  );
  t.match(problem(t, badLength, 400, 'CMP_ERR_REQUEST_MALFORMED').detail, /content-length/);
  t.equal(badLength?.headers.connection, 'close', 'the connection is closed: the stream cannot be trusted');
  problem(
    t,
    await ask('POST /v1/tokens HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n'),
    400,
    'CMP_ERR_REQUEST_MALFORMED',
  );
  problem(t, await ask('HELLO WORLD\r\n\r\n'), 400, 'CMP_ERR_REQUEST_MALFORMED');
  problem(t, await ask('GET /health/live HTTP/9.9\r\nhost: x\r\n\r\n'), 400, 'CMP_ERR_REQUEST_MALFORMED');

  const live = await fetch(`http://127.0.0.1:${port}/health/live`);
  t.equal(live.status, 200, 'the service is unharmed');
  t.same(
    lines.filter((l) => l.level >= 50),
    [],
    'no error lines: these are client errors',
  );
  t.ok(
    lines.some((l) => l.msg === 'request rejected by the HTTP parser' && l.code === 'CMP_ERR_REQUEST_MALFORMED'),
    'logged by code',
  );
});

t.test(
  'a slow client gets 408 while others are served; a stalled body too; a client leaving mid-body harms nothing',
  async (t) => {
    const { app, port, lines } = await start({ COMPACTOR_REQUEST_TIMEOUT_MS: '1000' });
    t.teardown(() => app.close());
    const started = Date.now();
    const slowHeaders = exchange(port, 'POST /v1/tokens HTTP/1.1\r\nhost: x\r\n');
    const stalledBody = exchange(
      port,
      'POST /v1/tokens HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"mess',
    );
    const meanwhile = await fetch(`http://127.0.0.1:${port}/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(meanwhile.status, 200, 'another client is served meanwhile');
    const [slow, stalled] = await Promise.all([slowHeaders, stalledBody]);
    // Their 408s say they timed out (a hang fails the test at its own timeout); only a lower bound
    // on time is asserted: a busy machine answers late, never early (issue 39: 5,239 ms at load 35).
    t.ok(Date.now() - started >= 900, `both timed out, not before the timeout (${Date.now() - started} ms)`);
    t.match(
      problem(t, answers(slow)[0], 408, 'CMP_ERR_REQUEST_TIMEOUT').detail,
      /within 1000 ms \(COMPACTOR_REQUEST_TIMEOUT_MS\)/,
    );
    problem(t, answers(stalled)[0], 408, 'CMP_ERR_REQUEST_TIMEOUT');

    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          'POST /v1/compact HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{"messages": [',
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
    });
    await new Promise((r) => setTimeout(r, 100));
    t.equal((await fetch(`http://127.0.0.1:${port}/health/ready`)).status, 200, 'a client that left mid-body harms nothing');
    t.same(
      lines.filter((l) => l.level >= 50),
      [],
      'and logs no error',
    );
  },
);

t.test('while closing: the answer in flight closes its connection, and a pipelined latecomer is not read', async (t) => {
  // Node reaps only the connections idle when the server closes; an answer sent while draining
  // says `connection: close`, so a keep-alive client cannot hold the drain open. A request
  // pipelined behind it is therefore never read (the client retries it elsewhere); requests that
  // still reach the app while it closes get 503 CMP_ERR_SERVICE_UNAVAILABLE (plugins/app/problem.ts).
  const { app, port } = await start();
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] });
  const request = (path: string) =>
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  let closing: Promise<undefined> | undefined;
  const raw = await exchange(
    port,
    request('/v1/tokens').slice(0, -10),
    async () => {
      await new Promise((r) => setTimeout(r, 100));
      closing = (app as FastifyInstance).close();
      await new Promise((r) => setTimeout(r, 50));
    },
    `${request('/v1/tokens').slice(-10)}${request('/v1/window')}`,
  );
  await closing;
  const [first, more] = answers(raw);
  t.equal(first?.status, 200, 'the request in flight completes');
  t.equal(first?.headers.connection, 'close', 'and its answer closes the connection');
  t.equal(more, undefined, 'nothing more is read from a connection told to close');
});
