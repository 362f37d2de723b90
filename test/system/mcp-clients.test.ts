import t from 'tap';
import { build } from '../support/app.js';
import { CLIENTS, installClient, registryReachable, runClient } from '../support/clients.js';
import { FakeProvider, type RecallState, recallSteps } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import { asObject } from '../support/provider/parse.js';

/**
 * The model recalls what was cleared, as the agents people run do it: Claude Code and Codex CLI
 * go through the proxy (which clears old tool results over a small window) with Compactor's MCP
 * server configured. The fake provider reads an artifact id from a placeholder in its request,
 * loads the recall tool where the client defers it (Claude Code's ToolSearch, Codex's
 * tool_search) and calls it; the client runs the tool against `/mcp`, and the next request
 * carries the original, byte for byte.
 */

const CASES = [
  { name: 'claude-code' as const, prefix: '/anthropic', limit: 32_000, target: 22_000 },
  { name: 'codex' as const, prefix: '/openai', limit: 24_000, target: 16_000 },
];

/** The text of every tool result in a request's history (Anthropic tool_result blocks, Responses outputs). */
function resultTexts(history: unknown[]): string[] {
  const out: string[] = [];
  for (const m of history) {
    const item = asObject(m as never);
    if (!item) continue;
    if (item.type === 'function_call_output') {
      const output = item.output;
      if (typeof output === 'string') out.push(output);
      // An MCP tool's result in Codex: content items; their texts, in order.
      else if (Array.isArray(output)) out.push(output.map((o) => String(asObject(o)?.text ?? '')).join('\n'));
    }
    for (const block of Array.isArray(item.content) ? item.content : []) {
      const b = asObject(block);
      if (b?.type !== 'tool_result') continue;
      out.push(typeof b.content === 'string' ? b.content : JSON.stringify(b.content));
    }
  }
  return out;
}

for (const c of CASES) {
  const spec = CLIENTS[c.name];
  t.test(`${c.name}@${spec.pinned}: the model recalls a cleared tool result through /mcp`, async (t) => {
    try {
      await installClient(c.name);
    } catch (error) {
      const registry = await registryReachable();
      if (registry.ok) throw error;
      t.pass('installed', {
        skip: `${spec.pkg}@${spec.pinned} cannot be installed: the npm registry is unreachable (${registry.reason})`,
      });
      return;
    }
    const state: RecallState = {};
    const fake = await new FakeProvider({ scenario: recallSteps({ steps: 12, lines: 1500 }, state) }).start();
    t.teardown(() => fake.stop());
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      COMPACTOR_PROXY_OPTIONS: JSON.stringify({ context_window: 60_000, target_tokens: c.target, limit: { tokens: c.limit } }),
    });
    const { base } = await listen(app);
    const run = await runClient(c.name, { baseUrl: `${base}${c.prefix}`, mcpUrl: `${base}/mcp`, timeoutMs: 180_000 });
    t.equal(run.exitCode, 0, 'the session finished', { stderr: run.stderr.slice(-2000) });
    t.ok(state.recalled, `the model asked to recall ${state.recalled}`);
    if (!state.recalled || state.calledAt === undefined) return;
    const original = await app.inject({ method: 'GET', url: `/v1/artifacts/${state.recalled}` });
    t.equal(original.statusCode, 200, 'the artifact is the proxy’s, in the scope /mcp reads');
    const content = (original.json() as { content: Record<string, unknown> }).content;
    const text = String(content.output ?? content.content);
    const after = fake.modelRequests().find((r) => r.seq > (state.calledAt as number));
    const history = (asObject(after?.json)?.messages ?? asObject(after?.json)?.input ?? []) as unknown[];
    const results = resultTexts(history);
    t.ok(
      results.some((r) => r.includes(text)),
      'the request after the recall carries the original output, byte for byte',
      { last: results.at(-1)?.slice(0, 300) },
    );
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    t.match(metrics, /compactor_mcp_calls_total\{tool="recall",outcome="ok"\} 1/, 'one recall, counted');
  });
}
