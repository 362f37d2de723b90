/**
 * Paths only a listening server with the default configuration takes (the worker pool's shedding
 * on, `COMPACTOR_MAX_QUEUE_WAIT_MS` at a default-like value), over real sockets: what a
 * keep-alive connection does after an answer given before its body was read.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { pino } from 'pino';
import type { Test } from 'tap';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { build, buildWithLlm, testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

interface Exchange {
  /** Status codes of the answers read, in order. */
  statuses: number[];
  /** The raw output of the connection. */
  raw: string;
  /** Whether the service closed the connection (false: it was still open when the test gave up). */
  closedByServer: boolean;
}

/** Writes `text` on a fresh connection and reads until the service closes it or `giveUpMs` pass. */
function exchange(port: number, text: string, giveUpMs = 10_000): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    let gaveUp = false;
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      raw += d;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const statuses = [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ statuses, raw, closedByServer: !gaveUp });
    });
    socket.once('connect', () => socket.write(text));
    setTimeout(() => {
      gaveUp = true;
      socket.destroy();
    }, giveUpMs).unref();
  });
}

const defaults = { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_MAX_QUEUE_WAIT_MS: '60000' } as const;

t.test('an answer given before the body was read does not leave its keep-alive connection hanging', async (t) => {
  const app = await build(t, defaults);
  const { port } = await listen(app);
  // Larger than the meters' buffers: the unread rest of it stays in the socket.
  const body = `${' '.repeat(300_000)}{"messages":[{"role":"user","content":"hi"}]}`;
  const cases = [
    ['POST', '/v1/window', 'text/plain', 415],
    ['GET', '/v1/artifacts/art_0123456789abcdef01234567', 'application/json', 404],
  ] as const;
  for (const [method, path, type, status] of cases) {
    const head = `${method} ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: ${type}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const next = 'GET /health/live HTTP/1.1\r\nhost: x\r\n\r\n';
    const answer = await exchange(port, head + body + next);
    t.equal(answer.statuses[0], status, `${method} ${path}: ${status}`);
    // Either the next request is answered or the connection is closed: never left waiting.
    t.ok(answer.closedByServer || answer.statuses[1] === 200, `${method} ${path}: the connection goes on or is closed`);
    if (answer.statuses.length === 1) t.match(answer.raw, /\r\nconnection: close\r\n/i, 'and the answer says it closes');
  }
  const after = await fetch(`http://127.0.0.1:${port}/v1/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(after.status, 200, 'the service still answers');
});

t.test('what Node would answer itself is answered as problem+json, or served', async (t) => {
  const app = await build(t, defaults);
  const { port } = await listen(app);
  const body = '{"messages":[{"role":"user","content":"hi"}]}';
  const post = (headers: string) =>
    `POST /v1/tokens HTTP/1.1\r\n${headers}content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  const problemOf = (answer: Exchange) => JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4)) as { code?: string };

  const noHost = await exchange(port, post(''));
  t.equal(noHost.statuses[0], 400, 'HTTP/1.1 without Host: 400');
  t.match(noHost.raw, /content-type: application\/problem\+json/i);
  t.equal(problemOf(noHost).code, 'CMP_ERR_REQUEST_MALFORMED');
  t.ok(noHost.closedByServer, 'and the connection is closed');

  // RFC 9110 lets a server ignore an expectation it does not know: the request is served.
  const expect = await exchange(
    port,
    `${post('host: x\r\nexpect: something-else\r\n')}GET /health/live HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
  );
  t.same(expect.statuses, [200, 200], 'Expect other than 100-continue: served');

  const connectAnswer = await exchange(port, 'CONNECT 127.0.0.1:80 HTTP/1.1\r\nhost: 127.0.0.1:80\r\n\r\n');
  t.equal(connectAnswer.statuses[0], 405, 'CONNECT: 405, not a dropped connection');
  t.match(connectAnswer.raw, /content-type: application\/problem\+json/i);
  t.equal(problemOf(connectAnswer).code, 'CMP_ERR_METHOD_NOT_ALLOWED');

  const http10 = await exchange(port, post('').replace('HTTP/1.1', 'HTTP/1.0'));
  t.equal(http10.statuses[0], 200, 'HTTP/1.0 needs no Host');
});

t.test("a summarizer server's out-of-range usage figures do not fail the summary it wrote", async (t) => {
  const { app, server } = await buildWithLlm(t, { COMPACTOR_MAX_QUEUE_WAIT_MS: '60000' });
  const { base } = await listen(app);
  // Negative, beyond every integer, not a number: what a broken or hostile server may report.
  server.fallback = () => ({
    content: '## Goal and constraints\nFix the build.\n## Current state\nWorking.',
    usage: { prompt_tokens: -5, completion_tokens: 1e308, cached_tokens: 'many' as unknown as number },
  });
  const messages: unknown[] = [{ role: 'user', content: 'Fix the build.' }];
  for (let i = 0; i < 12; i++) {
    messages.push({ role: 'assistant', content: `step ${i}: ${'checked the build output. '.repeat(30)}` });
    messages.push({ role: 'user', content: `go on with step ${i + 1}` });
  }
  const res = await fetch(`${base}/v1/summarize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, keep: { messages: 2 }, on_failure: 'error' }),
  });
  const body = (await res.json()) as { applied?: boolean; usage?: Record<string, unknown> };
  t.equal(res.status, 200, 'the summary is served');
  t.equal(body.applied, true);
  for (const field of ['input_tokens', 'output_tokens', 'cached_input_tokens', 'total_tokens']) {
    const value = body.usage?.[field];
    t.ok(Number.isSafeInteger(value) && (value as number) >= 0, `usage.${field} is a whole number: ${value}`);
  }
  t.equal((await fetch(`${base}/metrics`)).status, 200, 'the metrics still answer');
});

/** An OpenAI-compatible server for one test, answering every call with `handler`; its base URL. */
async function upstream(t: Test, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => handler(request, response));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}/v1`;
}

/** A history summarization acts on with `keep: {messages: 2}`. */
function longHistory(): unknown[] {
  const messages: unknown[] = [{ role: 'user', content: 'Fix the build.' }];
  for (let i = 0; i < 12; i++) {
    messages.push({ role: 'assistant', content: `step ${i}: ${'checked the build output. '.repeat(30)}` });
    messages.push({ role: 'user', content: `go on with step ${i + 1}` });
  }
  return messages;
}

const summarize = (base: string) =>
  fetch(`${base}/v1/summarize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: longHistory(), keep: { messages: 2 }, on_failure: 'error' }),
  });

t.test('a summarizer that sends its headers and then trickles its body times out like one that says nothing', async (t) => {
  const url = await upstream(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    const beat = setInterval(() => response.write(' '), 50);
    response.on('close', () => clearInterval(beat));
  });
  const app = await build(t, {
    ...defaults,
    OPENAI_BASE_URL: url,
    COMPACTOR_SUMMARIZER_MODEL: 'small',
    COMPACTOR_SUMMARIZER_TIMEOUT_MS: '500',
    COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
    // Without a timeout on the body, only this deadline would end the call.
    COMPACTOR_DEADLINE_MS: '25000',
  });
  const res = await summarize((await listen(app)).base);
  t.equal(res.status, 504, 'a summarizer timeout');
  t.equal(((await res.json()) as { code?: string }).code, 'CMP_ERR_SUMMARIZER_TIMEOUT');
});

t.test('a summarizer answer whose model is not a string is served, and so is its cached copy', async (t) => {
  const url = await upstream(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        model: { name: 'small' },
        choices: [{ index: 0, message: { role: 'assistant', content: '## Current state\nWorking.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    );
  });
  const app = await build(t, { ...defaults, OPENAI_BASE_URL: url, COMPACTOR_SUMMARIZER_MODEL: 'small' });
  const { base } = await listen(app);
  for (const which of ['made', 'cached']) {
    const res = await summarize(base);
    const body = (await res.json()) as { summary?: { model?: unknown } };
    t.equal(res.status, 200, `${which}: served`);
    t.equal(body.summary?.model, 'small', `${which}: the model asked for`);
  }
});

t.test('a request refused while draining is a warning, not an error with a stack', async (t) => {
  const lines: { level: number; msg: string; code?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = await buildApp(testConfig(defaults), { logger });
  let refused: Exchange | undefined;
  // Registered after the health plugin's: the service is draining, and still listening.
  app.addHook('preClose', async () => {
    refused = await exchange(port, 'GET /v1/artifacts/art_0123456789abcdef01234567 HTTP/1.1\r\nhost: x\r\n\r\n');
  });
  const { port } = await listen(app);
  await app.close();
  t.equal(refused?.statuses[0], 503, 'refused with 503');
  t.match(refused?.raw, /retry-after: \d+/i, 'with retry-after');
  t.match(refused?.raw, /content-type: application\/problem\+json/i);
  t.same(
    lines.filter((l) => l.level >= 50),
    [],
    'no error line: draining is the service working as designed',
  );
  t.ok(
    lines.some((l) => l.code === 'CMP_ERR_SERVICE_UNAVAILABLE' && l.level === 40),
    'a warning by code',
  );
});

t.test('a client that never reads its answer does not hold the in-flight limit for ever', async (t) => {
  const app = await build(t, {
    ...defaults,
    // Room for a slow machine to answer within the deadline (a 20 MB window), short enough to wait for.
    COMPACTOR_DEADLINE_MS: '5000',
    COMPACTOR_REQUEST_TIMEOUT_MS: '1000',
    COMPACTOR_SUMMARIZER_TIMEOUT_MS: '100',
    COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
  });
  const { base, port } = await listen(app);
  const inflight = async () =>
    Number(/^compactor_inflight_bytes (\S+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1]);
  const messages: unknown[] = [{ role: 'user', content: 'task' }];
  for (let i = 0; i < 100; i++)
    messages.push({ role: 'assistant', content: `${'a'.repeat(100_000)}${i}` }, { role: 'user', content: `u${i}` });
  const body = JSON.stringify({ messages, keep: { runs: 100 } });
  // Larger than the socket buffers: its answer stays in the service while the client reads nothing.
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(
    `POST /v1/window HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  );
  socket.pause();
  t.teardown(() => socket.destroy());
  let held = 0;
  for (let i = 0; i < 600 && held === 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    held = await inflight();
  }
  t.ok(held > 0, 'its weight is held while the answer is written');
  // Nothing moves on the connection: it is closed once the deadline and the request timeout have passed.
  for (let i = 0; i < 600 && (await inflight()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(await inflight(), 0, 'and released once the connection is closed');
});
