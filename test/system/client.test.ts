import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompactorClient, CompactorHttpError, type FetchLike } from '@compactor/client';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

// The package `@compactor/client` (clients/typescript, a devDependency linked from there), as it ships: its committed dist/.

t.test('the client package against the real app on a listening port: every endpoint', async (t) => {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: 'client-key-0123456789' }), {
    logger: pino({ level: 'silent' }),
  });
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const client = new CompactorClient({ baseUrl: `${base}/`, apiKey: 'client-key-0123456789' });
  const big = Array.from({ length: 120 }, (_, i) => `line ${i}: value ${i * 7}`).join('\n');
  const messages = [
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    },
    { role: 'tool', tool_call_id: 'a', content: big },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -la"}' } }],
    },
    { role: 'tool', tool_call_id: 'b', content: 'done' },
  ];
  t.same(await client.health(), { status: 'ready' });
  t.same(await client.health('live'), { status: 'ok' });
  const tokens = await client.tokens({ messages });
  t.equal(tokens.format, 'openai-chat');
  const compacted = await client.compact({ messages, keep_tool_uses: 1 });
  t.equal(compacted.applied, true);
  const artifact = await client.artifact(compacted.artifacts[0]?.id ?? '');
  t.same(artifact.content, messages[2]);
  const expanded = await client.expand({ messages: compacted.messages });
  t.same(expanded.messages, messages);
  const fitted = await client.fit({ messages, target_tokens: 100 });
  t.ok(fitted.tokens.after <= fitted.tokens.before);
  t.equal((await client.validate({ messages })).valid, true);
  t.equal((await client.window({ messages, keep: { runs: 1 } })).format, 'openai-chat');
  t.equal((await client.summarize({ messages, keep: { messages: 2 } })).format, 'openai-chat');
  const error = await client.artifact('art_0123456789abcdef01234567').catch((e: unknown) => e);
  t.ok(error instanceof CompactorHttpError && error.status === 404 && error.problem?.code === 'CMP_ERR_ARTIFACT_NOT_FOUND');
  const anonymous = new CompactorClient({ baseUrl: base });
  const denied = await anonymous.tokens({ messages }).catch((e: unknown) => e);
  t.ok(denied instanceof CompactorHttpError && denied.status === 401 && denied.problem?.status === 401);
  t.same(await anonymous.health(), { status: 'ready' }, 'health needs no key');
  await app.close();
  const closed = await client.health().catch((e: unknown) => e);
  t.ok(closed instanceof Error && !(closed instanceof CompactorHttpError), 'a service that is gone is a fetch error');
});

t.test('a server that answers 503 with retry-after, then 200: the client waits and gets the answer', async (t) => {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:' }), { logger: pino({ level: 'silent' }) });
  t.teardown(() => app.close());
  const { port: upstream } = await listen(app);
  // A front that refuses the first request with 503 + retry-after: 1, then passes requests to the app.
  let seen = 0;
  const front = createServer((req, res) => {
    seen++;
    if (seen === 1) {
      req.resume();
      res
        .writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' })
        .end(JSON.stringify({ type: 'about:blank', title: 'busy', status: 503, detail: 'busy', code: 'CMP_ERR_OVERLOADED' }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const answer = await fetch(`http://127.0.0.1:${upstream}${req.url}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json' },
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  t.teardown(() => new Promise<void>((resolve) => front.close(() => resolve())));
  const base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;

  const started = Date.now();
  const counted = await new CompactorClient({ baseUrl: base }).tokens({ messages: [{ role: 'user', content: 'hi' }] });
  t.equal(counted.format, 'openai-chat', 'the second try is served');
  t.equal(seen, 2);
  t.ok(Date.now() - started >= 950, 'waited the second that retry-after gave');

  seen = 0;
  const refused = await new CompactorClient({ baseUrl: base, retries: 0 })
    .tokens({ messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  t.ok(refused instanceof CompactorHttpError && refused.status === 503 && refused.retryAfterSeconds === 1);
  t.equal(
    refused instanceof CompactorHttpError && refused.problem?.code,
    'CMP_ERR_OVERLOADED',
    'the problem document is carried',
  );
  t.equal(seen, 1, 'retries: 0 throws at once');
});

t.test('retries: 429 and 503 within the deadline, never without retry-after, never past the deadline', async (t) => {
  const answers: { status: number; retryAfter?: string; body?: string }[] = [];
  let calls = 0;
  const stub: FetchLike = async () => {
    const next = answers[calls++] ?? { status: 200 };
    const body =
      next.body ??
      (next.status === 200
        ? JSON.stringify({ ok: true })
        : JSON.stringify({ code: next.status === 429 ? 'CMP_ERR_RATE_LIMITED' : 'CMP_ERR_OVERLOADED', detail: 'busy' }));
    return new Response(body, {
      status: next.status,
      headers: { 'content-type': 'application/json', ...(next.retryAfter ? { 'retry-after': next.retryAfter } : {}) },
    });
  };
  const client = (retries?: number, timeoutMs?: number) =>
    new CompactorClient({ baseUrl: 'http://compactor.invalid', fetch: stub, retries, timeoutMs });
  const hi = { messages: [{ role: 'user', content: 'hi' }] };

  answers.push({ status: 503, retryAfter: '1' }, { status: 429, retryAfter: '1' });
  const started = Date.now();
  t.same(await client().tokens(hi), { ok: true }, 'served on the third try (retries default 2)');
  t.equal(calls, 3);
  t.ok(Date.now() - started >= 1900, 'waited what retry-after said, twice');

  calls = 0;
  answers.length = 0;
  answers.push({ status: 503, retryAfter: '30' });
  const late = await client(2, 2000)
    .tokens(hi)
    .catch((e: unknown) => e);
  t.ok(late instanceof CompactorHttpError && late.status === 503, 'a wait past the deadline is not taken');
  t.equal(calls, 1);

  calls = 0;
  answers.length = 0;
  answers.push({ status: 503 }, { status: 500, retryAfter: '1' });
  const bare = await client()
    .tokens(hi)
    .catch((e: unknown) => e);
  t.ok(
    bare instanceof CompactorHttpError && bare.status === 503 && bare.retryAfterSeconds === undefined,
    'no retry-after, no retry',
  );
  t.equal(calls, 1);

  calls = 0;
  answers.length = 0;
  answers.push({ status: 502, body: '<html>bad gateway</html>' });
  const proxy = await client()
    .tokens(hi)
    .catch((e: unknown) => e);
  t.ok(proxy instanceof CompactorHttpError && proxy.status === 502 && proxy.problem === undefined, 'a body that is not JSON');
  t.equal(proxy instanceof Error && proxy.message, 'HTTP 502');
});
