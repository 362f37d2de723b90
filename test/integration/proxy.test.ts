import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import { build, fakeLlm, testConfig } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import { conversation, SYSTEM } from '../support/prepared.js';
import { asObject } from '../support/provider/parse.js';

/**
 * The proxy's own behaviour over real HTTP, against the fake provider: what passes through
 * untouched, what is reduced and how the conversation's state makes each upstream request extend
 * the previous one, every way it fails open, who owns a conversation, and Compactor's own key.
 */

const output = (step: number) => Array.from({ length: 400 }, (_, i) => `line ${step}.${i}: ${'x'.repeat(20)}`).join('\n');

/** An Anthropic body of `steps` Bash calls with large outputs. */
function anthropicBody(steps: number, task = 'Count the lines.'): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'user', content: task }];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: `wc ${s}` } }],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${s}`, content: output(s) }] });
  }
  return {
    model: 'claude-opus-4-8',
    max_tokens: 128000,
    system: [{ type: 'text', text: 'You are an agent.' }],
    tools: [{ name: 'Bash', description: 'run', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }],
    metadata: { user_id: 'someone' },
    messages,
  };
}

interface Proxy {
  app: FastifyInstance;
  base: string;
  fake: FakeProvider;
}

async function proxy(t: Test, overrides: Partial<Record<keyof Config, string>> = {}): Promise<Proxy> {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    COMPACTOR_UPSTREAM_GEMINI: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    ...overrides,
  });
  const { base } = await listen(app);
  return { app, base, fake };
}

const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-ant-user-one',
      'anthropic-version': '2023-06-01',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const historyOf = (fake: FakeProvider, i: number) => (asObject(fake.modelRequests()[i]?.json)?.messages ?? []) as unknown[];

t.test('paths that are not model calls pass through unchanged; off is a 404 in the provider’s shape', async (t) => {
  const { base, fake } = await proxy(t, { COMPACTOR_UPSTREAM_GEMINI: 'off' });
  const res = await fetch(`${base}/anthropic/v1/models?limit=2`, { headers: { 'x-api-key': 'sk-ant-x' } });
  t.equal(res.status, 404, "the provider's own status");
  t.equal(res.headers.get('x-compactor'), 'passthrough');
  const seen = fake.requests.at(-1);
  t.equal(seen?.url, '/v1/models?limit=2', 'path and query as sent');
  t.equal(seen?.headers['x-api-key'], 'sk-ant-x', 'the credential as sent');
  const off = await fetch(`${base}/gemini/v1beta/models/gemini-3-pro:generateContent`, { method: 'POST', body: '{}' });
  t.equal(off.status, 404);
  t.match(await off.json(), { error: { code: 404 } }, "Gemini's error shape");
});

t.test('a conversation: each upstream request extends the previous one until a reduction pays, then extends that', async (t) => {
  const { base, fake, app } = await proxy(t, {
    COMPACTOR_PROXY_OPTIONS: JSON.stringify({ context_window: 100_000, target_tokens: 6000, limit: { tokens: 12_000 } }),
  });
  const actions: string[] = [];
  for (let steps = 1; steps <= 8; steps++) {
    const res = await post(base, '/anthropic/v1/messages', anthropicBody(steps), { 'x-claude-code-session-id': 'session-a' });
    t.equal(res.status, 200, `call ${steps}: 200`);
    actions.push(String(res.headers.get('x-compactor')));
    await res.text();
  }
  t.ok(actions.includes('reduced'), `a reduction was made (${actions.join(', ')})`);
  t.equal(actions[0], 'unchanged', 'the first call goes as it came');
  for (let i = 1; i < actions.length; i++) {
    const before = historyOf(fake, i - 1).map((m) => JSON.stringify(m));
    const now = historyOf(fake, i).map((m) => JSON.stringify(m));
    const extends_ = before.every((m, k) => m === now[k]);
    t.equal(
      extends_,
      actions[i] !== 'reduced',
      `call ${i + 1} (${actions[i]}): ${extends_ ? 'extends the previous upstream request' : 'a new reduction'}`,
    );
  }
  const reducedAt = actions.indexOf('reduced');
  t.ok(
    historyOf(fake, reducedAt).length < (anthropicBody(reducedAt + 1).messages as unknown[]).length ||
      JSON.stringify(historyOf(fake, reducedAt)).includes('art_'),
    'the reduced call is smaller',
  );
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_proxy_requests_total\{provider="anthropic",outcome="reduced"\} [1-9]/);
  t.match(metrics, /compactor_proxy_usage_read_total\{provider="anthropic",found="yes"\} 8/, 'every answer’s usage was read');
});

t.test('fail open: what the proxy cannot or must not reduce goes upstream as it came, and says why', async (t) => {
  const { base, fake } = await proxy(t, {
    COMPACTOR_BODY_LIMIT: '200000',
    COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 100 }),
  });
  const cases: [string, string | Record<string, unknown>, Record<string, string>, string][] = [
    ['the client asks', anthropicBody(3), { 'x-compactor-bypass': '1' }, 'client'],
    ['not JSON', '{"messages": [', {}, 'not_json'],
    [
      'a history the service refuses',
      {
        ...anthropicBody(1),
        messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'r' }] }],
      },
      {},
      'history_malformed',
    ],
    ['options that are not fit options', anthropicBody(3), { 'x-compactor-options': '{"target_tokens": "lots"}' }, 'options'],
    ['a body over the limit', anthropicBody(20), {}, 'too_large'],
  ];
  for (const [what, body, headers, reason] of cases) {
    const sent = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await post(base, '/anthropic/v1/messages', sent, headers);
    await res.text();
    t.equal(res.headers.get('x-compactor'), `bypass; reason=${reason}`, `${what}: x-compactor says why`);
    t.equal(fake.requests.at(-1)?.raw.toString('utf8'), sent, `${what}: the body went upstream byte for byte`);
  }
});

t.test(
  'the provider’s statuses and errors reach the client as sent; an unreachable upstream is a 502 in its shape',
  async (t) => {
    const { base, fake } = await proxy(t);
    fake.enqueue({ fault: { kind: 'status', status: 529, message: 'overloaded', retryAfter: 3 } });
    const res = await post(base, '/anthropic/v1/messages', anthropicBody(1));
    t.equal(res.status, 529);
    t.equal(res.headers.get('retry-after'), '3');
    t.match(await res.json(), { type: 'error', error: { message: 'overloaded' } });
    const down = await proxy(t, { COMPACTOR_UPSTREAM_OPENAI: 'http://127.0.0.1:9' });
    const r = await post(
      down.base,
      '/openai/v1/responses',
      { model: 'gpt-5', input: [{ role: 'user', content: 'hi' }] },
      { authorization: 'Bearer sk-x' },
    );
    t.equal(r.status, 502);
    t.match(await r.json(), { error: { type: 'server_error', code: 'bad_gateway' } }, "OpenAI's error shape");
  },
);

t.test(
  'two users of one proxy never share a conversation; with keys, Compactor’s key is asked for and never forwarded',
  async (t) => {
    const options = JSON.stringify({ context_window: 100_000, target_tokens: 6000, limit: { tokens: 12_000 } });
    const { base, fake } = await proxy(t, { COMPACTOR_PROXY_OPTIONS: options });
    // User one grows a conversation until it is reduced; user two sends the same history.
    let reduced = 0;
    for (let steps = 1; steps <= 8; steps++) {
      const res = await post(base, '/anthropic/v1/messages', anthropicBody(steps), { 'x-claude-code-session-id': 'same' });
      if (res.headers.get('x-compactor') === 'reduced') reduced++;
      await res.text();
    }
    t.ok(reduced > 0, 'user one was reduced');
    const other = await post(base, '/anthropic/v1/messages', anthropicBody(8), {
      'x-api-key': 'sk-ant-user-two',
      'x-claude-code-session-id': 'same',
    });
    await other.text();
    const conversationOne = fake.modelRequests().at(-2);
    t.not(other.headers.get('x-compactor'), 'kept', 'user two does not extend user one’s state');
    t.not(conversationOne, undefined);

    const keyed = await proxy(t, { COMPACTOR_API_KEYS: 'compactor-key-0123456789' });
    const refused = await post(keyed.base, '/anthropic/v1/messages', anthropicBody(1));
    t.equal(refused.status, 401);
    t.match(await refused.json(), { type: 'error', error: { type: 'authentication_error' } }, "Anthropic's error shape");
    t.equal(keyed.fake.requests.length, 0, 'nothing went upstream');
    const ok = await post(keyed.base, '/anthropic/v1/messages', anthropicBody(1), {
      'x-compactor-key': 'compactor-key-0123456789',
    });
    t.equal(ok.status, 200);
    await ok.text();
    t.equal(keyed.fake.requests.at(-1)?.headers['x-compactor-key'], undefined, 'our key stays with us');
    t.equal(keyed.fake.requests.at(-1)?.headers['x-api-key'], 'sk-ant-user-one', 'theirs goes on');
  },
);

t.test('count_tokens counts what would be sent; the store down fails open; no credential reaches a log line', async (t) => {
  const lines: string[] = [];
  const logger = pino(
    { level: 'trace' },
    new Writable({
      write: (chunk, _e, done) => {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const config = testConfig({ COMPACTOR_STORE_URL: 'memory:', COMPACTOR_UPSTREAM_ANTHROPIC: fake.url, LOG_LEVEL: 'trace' });
  const app = await buildApp(config, { logger });
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const counted = await post(base, '/anthropic/v1/messages/count_tokens', anthropicBody(2), {
    'x-api-key': 'sk-ant-secret-in-logs',
  });
  t.equal(counted.status, 200);
  t.match(await counted.json(), { input_tokens: Number });
  t.equal(fake.requests.at(-1)?.path, '/v1/messages/count_tokens');
  const store = app.store as { get: unknown };
  store.get = async () => {
    throw Object.assign(new Error('down'), { code: 'CMP_ERR_STORE_UNAVAILABLE' });
  };
  const res = await post(base, '/anthropic/v1/messages', anthropicBody(2), { 'x-api-key': 'sk-ant-secret-in-logs' });
  await res.text();
  t.equal(res.status, 200, 'the call still went through');
  t.match(res.headers.get('x-compactor'), /^bypass; reason=/, `and said so (${res.headers.get('x-compactor')})`);
  const all = lines.join('');
  t.notOk(all.includes('sk-ant-secret-in-logs'), 'the credential is in no log line');
  t.notOk(all.includes('line 1.3'), 'no content is in a log line');
});

t.test(
  'prepared summaries through the proxy: made off the request path at the soft point, spliced by the call that needs it',
  async (t) => {
    const fake = await new FakeProvider().start();
    t.teardown(() => fake.stop());
    const llm = await fakeLlm(t);
    // The summarizer is slow: a call that waited for it would go past the budget.
    llm.fallback = () => ({
      content: '## Goal and constraints\nExplain the modules.\n## Current state\nHalf done.',
      delayMs: 400,
    });
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      OPENAI_BASE_URL: llm.url,
      COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
      COMPACTOR_PREPARE: 'on',
      COMPACTOR_PROXY_BUDGET_MS: '200',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({
        target_tokens: 3000,
        policy: 'tokens',
        summarize: { keep: { messages: 6 } },
        prepare: { at: { tokens: 1500 } },
      }),
    });
    const { base } = await listen(app);
    const headers = { authorization: 'Bearer sk-user', 'session-id': 'prepared-1' };
    const send = async (messages: unknown[]) => {
      const res = await post(base, '/openai/v1/chat/completions', { model: 'gpt-4o', messages }, headers);
      await res.text();
      return String(res.headers.get('x-compactor'));
    };
    let history: unknown[] = [SYSTEM, ...conversation(12, 0, true)];
    const actions = [await send(history)];
    // The summary is prepared in the background while the agent goes on.
    // Waits until it was made (the metric says so), to a generous deadline, rather than for 600 ms.
    for (let end = Date.now() + 60_000; Date.now() < end; ) {
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      if (/compactor_prepared_total\{event="prepared"\} [1-9]/.test(text)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    for (let turn = 12; turn < 24; turn += 2) {
      history = [...history, ...conversation(2, turn, true)];
      actions.push(await send(history));
    }
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    t.match(
      metrics,
      /compactor_prepared_total\{event="spliced"\} [1-9]/,
      `a prepared summary was spliced (${actions.join(', ')})`,
    );
    t.notOk(
      actions.some((a) => a.includes('reason=budget')),
      'no call waited past the budget for the summarizer',
    );
    t.ok(actions.includes('reduced'), 'and the conversation was reduced');
    t.ok(llm.requests.length <= 3, `${llm.requests.length} summarizer calls`);
  },
);

t.test("the proxy's fit goes through fit's own hook: the preparer is left alone when fit would not use it", async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  for (const prepare of [{ enabled: false }, { at: { tokens: 1500 } }]) {
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_PREPARE: 'on',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 3000, policy: 'tokens', prepare }),
    });
    const calls: string[] = [];
    const { context, after } = app.preparer;
    app.preparer.context = (scope) => {
      calls.push('context');
      return context.call(app.preparer, scope);
    };
    app.preparer.after = (scope, outcome) => {
      calls.push('after');
      return after.call(app.preparer, scope, outcome);
    };
    const { base } = await listen(app);
    const headers = { authorization: 'Bearer sk-user', 'session-id': 'hook-1' };
    const res = await post(
      base,
      '/openai/v1/chat/completions',
      { model: 'gpt-4o', messages: [SYSTEM, ...conversation(3)] },
      headers,
    );
    await res.text();
    t.equal(res.status, 200);
    const expected = prepare.enabled === false ? ['after'] : ['context', 'after'];
    t.same(calls, expected, `prepare ${JSON.stringify(prepare)}: ${expected.join(' then ')}, as on /v1/fit`);
  }
});
