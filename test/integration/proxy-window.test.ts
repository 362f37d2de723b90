import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { windowFromError } from '../../src/proxy/window.js';
import { build } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * Any model is reduced: the window from the request's declaration, the provider's own "too long"
 * answer (learned, nothing retried), the model table's family rule, else
 * `COMPACTOR_DEFAULT_CONTEXT_WINDOW`. Codex's default model (`gpt-6.2-sol`, in no table) is reduced.
 */

const output = (step: number) => Array.from({ length: 200 }, (_, i) => `line ${step}.${i}: ${'x'.repeat(30)}`).join('\n');

/** A Responses body as Codex sends it: developer message, environment, the task, then `steps` exec calls. */
function codexBody(steps: number, model: string): Record<string, unknown> {
  const input: unknown[] = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Count the lines.' }] },
  ];
  for (let s = 0; s < steps; s++) {
    input.push({ type: 'function_call', call_id: `call_${s}`, name: 'exec', arguments: JSON.stringify({ cmd: `wc ${s}` }) });
    input.push({ type: 'function_call_output', call_id: `call_${s}`, output: output(s) });
  }
  return { model, instructions: 'Be brief.', input, stream: false, prompt_cache_key: 'codex-session' };
}

function anthropicBody(steps: number, model: string): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'user', content: 'Count the lines.' }];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: `wc ${s}` } }],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${s}`, content: output(s) }] });
  }
  return { model, max_tokens: 1000, messages, metadata: { user_id: 'session-w' } };
}

async function stand(t: Test, overrides: Partial<Record<keyof Config, string>> = {}) {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    ...overrides,
  });
  const { base } = await listen(app);
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-w', authorization: 'Bearer sk-w', ...headers },
      body: JSON.stringify(body),
    });
    await res.text();
    return { status: res.status, x: res.headers.get('x-compactor') ?? '', tokens: res.headers.get('x-compactor-tokens') };
  };
  return { fake, post };
}

/** Posts a growing session of `steps` calls, returning each call's `x-compactor`. */
async function session(
  post: Awaited<ReturnType<typeof stand>>['post'],
  path: string,
  make: (s: number) => unknown,
  steps: number,
  headers?: Record<string, string>,
) {
  const out: string[] = [];
  for (let s = 1; s <= steps; s++) out.push((await post(path, make(s), headers)).x);
  return out;
}

t.test(
  'a model in no table (Codex’s gpt-6.2-sol) is reduced with COMPACTOR_DEFAULT_CONTEXT_WINDOW, never bypassed',
  async (t) => {
    const { post } = await stand(t, { COMPACTOR_DEFAULT_CONTEXT_WINDOW: '12000' });
    const xs = await session(post, '/openai/v1/responses', (s) => codexBody(s, 'gpt-6.2-sol'), 10);
    t.notOk(
      xs.some((x) => x.startsWith('bypass')),
      `no bypass (${xs.join(', ')})`,
    );
    t.ok(xs.includes('reduced'), 'reduced to the default window');
  },
);

t.test('the request’s own declaration wins over the default', async (t) => {
  const { post } = await stand(t, { COMPACTOR_DEFAULT_CONTEXT_WINDOW: '12000' });
  const declared = { 'x-compactor-options': JSON.stringify({ context_window: 1_000_000 }) };
  const xs = await session(post, '/openai/v1/responses', (s) => codexBody(s, 'gpt-6.2-sol'), 10, declared);
  t.notOk(xs.includes('reduced'), `a million-token window: nothing to reduce (${xs.join(', ')})`);
  t.notOk(xs.some((x) => x.startsWith('bypass')));
});

/**
 * Reductions by the window alone (policy tokens: above the target, half the window), so that which
 * window a call was fitted to shows in whether it was reduced: under the default policy, clearing
 * old tool results pays whatever the window.
 */
const BY_WINDOW = { 'x-compactor-options': JSON.stringify({ policy: 'tokens' }) };

t.test('a newer version of a known family takes the family’s window, not the default', async (t) => {
  const { post } = await stand(t, { COMPACTOR_DEFAULT_CONTEXT_WINDOW: '12000' });
  const xs = await session(post, '/anthropic/v1/messages', (s) => anthropicBody(s, 'claude-sonnet-9-9'), 10, BY_WINDOW);
  t.notOk(xs.includes('reduced'), `Claude's 200k window: nothing to reduce (${xs.join(', ')})`);
  t.notOk(xs.some((x) => x.startsWith('bypass')));
});

t.test('the provider’s own “too long” answer is learned: nothing retried, the next call is fitted', async (t) => {
  const { fake, post } = await stand(t);
  const sent = (await session(post, '/anthropic/v1/messages', (s) => anthropicBody(s, 'claude-sonnet-9-9'), 8, BY_WINDOW)).length;
  t.equal(fake.modelRequests().length, sent);
  fake.enqueue({ fault: { kind: 'status', status: 400, message: 'prompt is too long: 25000 tokens > 12000 maximum' } });
  const refused = await post('/anthropic/v1/messages', anthropicBody(9, 'claude-sonnet-9-9'), BY_WINDOW);
  t.equal(refused.status, 400, "the provider's answer reaches the client");
  t.equal(fake.modelRequests().length, sent + 1, 'nothing retried');
  const next = await post('/anthropic/v1/messages', anthropicBody(9, 'claude-sonnet-9-9'), BY_WINDOW);
  t.equal(next.x, 'reduced', 'the client’s retry is fitted to the learned window');
  const [before, after] = (next.tokens ?? '').split('->').map(Number);
  t.ok((after ?? Number.POSITIVE_INFINITY) < 12000 && (before ?? 0) > 12000, `under the learned window: ${next.tokens}`);
});

t.test('the window a provider states in its "too long" errors', async (t) => {
  t.equal(
    windowFromError(
      JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens > 200000 maximum' },
      }),
    ),
    200000,
  );
  t.equal(
    windowFromError(
      JSON.stringify({
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      }),
    ),
    128000,
  );
  t.equal(
    windowFromError(JSON.stringify({ error: { message: 'maximum context length is 5 tokens', code: 'other' } })),
    undefined,
  );
  t.equal(windowFromError('{"error":{"message":"Your input exceeds the context window of this model."}}'), undefined);
});
