import t, { type Test } from 'tap';
import { PROXY_CALLS_BETWEEN_BREAKS } from '../../src/proxy/fit-policy.js';
import { build } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * The proxy's cache economics over a growing session (issue 37), through a real listening server
 * against the fake provider: a reduction that breaks the cached prefix comes at most once every
 * `PROXY_CALLS_BETWEEN_BREAKS` calls unless forced, and clears every large tool result but the
 * newest (`PROXY_KEEP_TOOL_USES`), each cleared one leaving a placeholder that names its original;
 * the request's own `compact.keep_tool_uses` wins.
 */

/** About 2,600 tokens of one command's output. */
const output = (step: number) => Array.from({ length: 230 }, (_, i) => `line ${step}.${i}: ${'x'.repeat(36)}`).join('\n');

function body(steps: number): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'user', content: 'Survey every module and report the largest.' }];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: `Listing module ${s}.` },
        { type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: `ls module_${s}` } },
      ],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${s}`, content: output(s) }] });
  }
  return { model: 'claude-sonnet-4-5', max_tokens: 1000, messages, metadata: { user_id: 'session-breaks' } };
}

async function session(t: Test, steps: number, headers: Record<string, string> = {}) {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    COMPACTOR_PROXY_OPTIONS: JSON.stringify({ context_window: 100_000 }),
  });
  const { base } = await listen(app);
  const outcomes: string[] = [];
  for (let s = 1; s <= steps; s++) {
    const res = await fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-b', ...headers },
      body: JSON.stringify(body(s)),
    });
    await res.text();
    t.equal(res.status, 200);
    outcomes.push((res.headers.get('x-compactor') ?? '').split(';')[0] as string);
  }
  const upstream = fake
    .modelRequests()
    .map((r) => ((r.json as { messages: unknown[] }).messages ?? []).map((m) => JSON.stringify(m)));
  // A break: the request does not repeat the previous one's messages whole.
  const breaks: number[] = [];
  upstream.forEach((messages, i) => {
    const previous = upstream[i - 1];
    if (previous?.some((m, j) => messages[j] !== m)) breaks.push(i);
  });
  return { outcomes, upstream, breaks };
}

/** The tool results of an upstream request, whole (the original output) or cleared (a placeholder). */
function results(messages: readonly string[]): ('whole' | 'cleared')[] {
  return messages
    .map((m) => JSON.parse(m) as { content: unknown })
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b: { type?: string }) => b.type === 'tool_result')
    .map((b: { content: unknown }) => (String(b.content).startsWith('line ') ? 'whole' : 'cleared'));
}

t.test('breaks are spaced and clear every large tool result but the newest', async (t) => {
  const { outcomes, upstream, breaks } = await session(t, 30);
  t.ok(breaks.length >= 2, `the session was reduced more than once (breaks at ${breaks.join(', ')}; ${outcomes.join(', ')})`);
  for (let i = 1; i < breaks.length; i++)
    t.ok(
      (breaks[i] as number) - (breaks[i - 1] as number) >= PROXY_CALLS_BETWEEN_BREAKS,
      `breaks at calls ${breaks[i - 1]} and ${breaks[i]}: ${PROXY_CALLS_BETWEEN_BREAKS} calls apart at least`,
    );
  for (const at of breaks) {
    const kinds = results(upstream[at] as string[]);
    t.equal(kinds.at(-1), 'whole', `call ${at}: the newest result is whole`);
    t.notOk(kinds.slice(0, -1).includes('whole'), `call ${at}: every older large result is cleared`);
    const cleared = (upstream[at] as string[]).filter((m) => m.includes('[compactor:art_'));
    t.equal(cleared.length, kinds.length - 1, `call ${at}: each cleared result names its original`);
  }
});

t.test("the request's own keep_tool_uses wins over the proxy's", async (t) => {
  const keep = { 'x-compactor-options': JSON.stringify({ compact: { keep_tool_uses: 3 } }) };
  const { upstream, breaks } = await session(t, 30, keep);
  t.ok(breaks.length >= 1, 'reduced');
  for (const at of breaks) {
    const kinds = results(upstream[at] as string[]);
    t.same(kinds.slice(-3), ['whole', 'whole', 'whole'], `call ${at}: the newest three are whole`);
  }
});
