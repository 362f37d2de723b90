import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * One `info` line per proxied model call (provider, model, conversation, outcome, tokens, prefix,
 * ms) and one `warn` per conversation and bypass reason, with no message text and no credential.
 */

const CANARY = 'CANARY-proxy-5e1d-do-not-log';

function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

const output = (step: number) => Array.from({ length: 300 }, (_, i) => `line ${step}.${i}: ${CANARY}`).join('\n');

function body(steps: number): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'user', content: `task ${CANARY}` }];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: CANARY } }],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${s}`, content: output(s) }] });
  }
  return { model: 'claude-opus-4-8', max_tokens: 1000, system: `system ${CANARY}`, messages };
}

t.test('one info line per model call, one warn per conversation and reason; no content, no credential', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const { lines, stream } = capture();
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ target_tokens: 2000 }),
    }),
    { logger: pino({ level: 'info' }, stream) },
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const post = async (b: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': `sk-ant-${CANARY}`,
        'x-claude-code-session-id': 'session-1',
        authorization: `Bearer ${CANARY}`,
        ...headers,
      },
      body: JSON.stringify(b),
    });
    await res.text();
    return res.headers.get('x-compactor');
  };
  // A growing session, until a call is reduced (the cost policy decides which).
  const outcomes: (string | null)[] = [];
  for (let steps = 2; steps <= 12 && !outcomes.includes('reduced'); steps++) outcomes.push(await post(body(steps)));
  const reducedAt = outcomes.indexOf('reduced');
  t.ok(reducedAt >= 0, `a call was reduced (${outcomes.join(', ')})`);
  for (let i = 0; i < 3; i++) await post(body(12), { 'x-compactor-bypass': '1' });
  await post(body(12), { 'x-compactor-bypass': '1', 'x-claude-code-session-id': 'session-2' });
  const calls = lines.filter((l) => l.msg === 'proxy: model call');
  t.equal(calls.length, outcomes.length + 4, 'one info line per model call');
  t.same(
    calls.slice(0, outcomes.length).map((c) => c.outcome),
    outcomes,
    'each line says what the call’s x-compactor says',
  );
  t.match(calls[reducedAt], {
    level: 30,
    provider: 'anthropic',
    model: 'claude-opus-4-8',
    conversation: /^[0-9a-f]{16}$/,
    outcome: 'reduced',
    tokens_before: Number,
    tokens_after: Number,
    prefix: /^(kept|broken)$/,
    ms: Number,
  });
  t.ok((calls[reducedAt]?.tokens_before as number) > (calls[reducedAt]?.tokens_after as number), 'tokens before → after');
  t.match(calls.at(-1), { outcome: 'bypass', reason: 'client' });
  const warns = lines.filter((l) => l.level === 40 && String(l.msg).includes('unreduced'));
  t.equal(warns.length, 2, 'one warn per conversation and reason (two sessions), not per call');
  t.match(warns[0], { reason: 'client', provider: 'anthropic' });
  const text = JSON.stringify(lines);
  t.notOk(text.includes(CANARY), 'no message text, system prompt, tool input or credential in any line');
  t.notOk(text.includes('sk-ant-'), 'no provider key');
});
