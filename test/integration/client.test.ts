import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { CompactorClient, CompactorHttpError } from '../../src/client.js';
import { testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

t.test('the typed client against a real listening server', async (t) => {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: 'client-key' }), {
    logger: pino({ level: 'silent' }),
  });
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const client = new CompactorClient({ baseUrl: `${base}/`, apiKey: 'client-key' });
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
  t.ok(denied instanceof CompactorHttpError && denied.status === 401);
});

t.test('the client retries a 503 or 429 after its retry-after, within its deadline', async (t) => {
  const answers: { status: number; retryAfter?: string }[] = [];
  let calls = 0;
  const stub = (async () => {
    const next = answers[calls++] ?? { status: 200 };
    const body =
      next.status === 200
        ? JSON.stringify({ ok: true })
        : JSON.stringify({ code: next.status === 429 ? 'CMP_ERR_RATE_LIMITED' : 'CMP_ERR_OVERLOADED', detail: 'busy' });
    return new Response(body, {
      status: next.status,
      headers: { 'content-type': 'application/json', ...(next.retryAfter ? { 'retry-after': next.retryAfter } : {}) },
    });
  }) as typeof fetch;
  const client = (retries?: number, timeoutMs?: number) =>
    new CompactorClient({
      baseUrl: 'http://compactor.invalid',
      fetch: stub,
      ...(retries !== undefined ? { retries } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });

  answers.push({ status: 503, retryAfter: '1' }, { status: 429, retryAfter: '1' });
  const started = Date.now();
  t.same(await client().tokens({ messages: [{ role: 'user', content: 'hi' }] }), { ok: true }, 'served on the third try');
  t.equal(calls, 3);
  t.ok(Date.now() - started >= 1900, 'waited what retry-after said, twice');

  calls = 0;
  answers.length = 0;
  answers.push({ status: 503, retryAfter: '1' });
  const refused = await client(0)
    .tokens({ messages: [{ role: 'user', content: 'hi' }] })
    .catch((e) => e);
  t.ok(refused instanceof CompactorHttpError && refused.retryAfterSeconds === 1, 'retries: 0 throws at once, with retry-after');
  t.equal(calls, 1);

  calls = 0;
  answers.length = 0;
  answers.push({ status: 503, retryAfter: '30' });
  const late = await client(2, 2000)
    .tokens({ messages: [{ role: 'user', content: 'hi' }] })
    .catch((e) => e);
  t.equal(late.status, 503, 'a wait past the deadline is not taken');
  t.equal(calls, 1);

  calls = 0;
  answers.length = 0;
  answers.push({ status: 503 });
  const bare = await client()
    .tokens({ messages: [{ role: 'user', content: 'hi' }] })
    .catch((e) => e);
  t.equal(bare.status, 503, 'no retry-after, no retry');
  t.equal(calls, 1);
});
