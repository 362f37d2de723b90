import t from 'tap';
import { PROVIDERS } from '../../src/proxy/providers.js';
import { build } from '../support/app.js';
import { CLIENT_NAMES, CLIENTS, type ClientName, installClient, registryReachable, runClient } from '../support/clients.js';
import { FakeProvider, rememberedSteps } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import { asObject } from '../support/provider/parse.js';
import type { RecordedRequest } from '../support/provider/types.js';
import { Recorder, type Sent } from '../support/recorder.js';

const { normalized } = PROVIDERS.anthropic.markers;

/**
 * The agents people run, through the proxy: Claude Code, Codex CLI and opencode (pinned, from
 * npm, offline) point their base URL at Compactor, which forwards to the fake provider. The fake
 * scripts shell calls with large outputs over a small window (`COMPACTOR_PROXY_OPTIONS`), so the
 * proxy must reduce. Each session completes; every request the provider receives is a valid
 * history whose other fields (tools, system, …) and credential are exactly the client's; a
 * request the proxy did not reduce is the client's body byte for byte; and the cached prefix
 * breaks only where the proxy made a reduction.
 */

const STEPS = 8;

/** Each client's proxy options: a window small enough that its own prompt and eight large outputs overflow it. */
const OPTIONS: Record<ClientName, Record<string, unknown>> = {
  'claude-code': { context_window: 60_000, target_tokens: 22_000, limit: { tokens: 32_000 } },
  codex: { context_window: 60_000, target_tokens: 16_000, limit: { tokens: 26_000 } },
  opencode: { context_window: 60_000, target_tokens: 16_000, limit: { tokens: 26_000 } },
};

const PREFIX: Record<ClientName, string> = { 'claude-code': '/anthropic', codex: '/openai', opencode: '/anthropic' };

function historyOf(json: Record<string, unknown> | undefined): unknown[] {
  const h = json?.messages ?? json?.input ?? json?.contents;
  return Array.isArray(h) ? h : [];
}

function withoutHistory(json: Record<string, unknown>): string {
  const { messages: _m, input: _i, contents: _c, ...rest } = json;
  return JSON.stringify(rest);
}

const credential = (headers: Record<string, unknown>) => JSON.stringify([headers['x-api-key'], headers.authorization]);

for (const name of CLIENT_NAMES) {
  const spec = CLIENTS[name];
  t.test(`${name}@${spec.pinned} through the proxy`, async (t) => {
    try {
      await installClient(name);
    } catch (error) {
      const registry = await registryReachable();
      if (registry.ok) throw error;
      t.pass('installed', {
        skip: `${spec.pkg}@${spec.pinned} cannot be installed: the npm registry is unreachable (${registry.reason})`,
      });
      return;
    }
    const fake = await new FakeProvider({ scenario: rememberedSteps({ steps: STEPS, lines: 1500 }) }).start();
    t.teardown(() => fake.stop());
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_PROXY_OPTIONS: JSON.stringify(OPTIONS[name]),
      // A slow machine must not turn the proxy's decisions into budget bypasses.
      COMPACTOR_PROXY_BUDGET_MS: '30000',
    });
    const { base } = await listen(app);
    const recorder = await new Recorder(base).start();
    t.teardown(() => recorder.stop());

    const run = await runClient(name, { baseUrl: `${recorder.url}${PREFIX[name]}`, timeoutMs: 180_000 });
    t.equal(run.timedOut, false, 'the session finished');
    t.equal(run.exitCode, 0, 'the client exits 0', { stderr: run.stderr.slice(-2000) });

    const sent: Sent[] = recorder.sent.filter((s) => /\/messages(\?|$)|\/responses(\?|$)/.test(s.url));
    const upstream: RecordedRequest[] = fake.modelRequests();
    t.equal(upstream.length, sent.length, `one upstream request per model call (${sent.length})`);
    t.ok(upstream.length >= STEPS + 1, `a model call per step (${upstream.length})`);
    const reduced = sent.filter((s) => s.compactor === 'reduced').length;
    t.ok(reduced >= 1, `the proxy reduced ${reduced} of ${sent.length} calls`);
    t.ok(
      sent.every((s) => s.compactor !== undefined && !s.compactor.startsWith('bypass')),
      `no call bypassed (${[...new Set(sent.map((s) => s.compactor))].join(', ')})`,
    );

    let prefixBreaks = 0;
    for (let i = 0; i < upstream.length; i++) {
      const up = upstream[i] as RecordedRequest;
      const client = sent[i] as Sent;
      const json = asObject(up.json) as Record<string, unknown>;
      const theirs = JSON.parse(client.body.toString('utf8')) as Record<string, unknown>;
      t.equal(
        withoutHistory(json),
        withoutHistory(theirs),
        `call ${i}: every field but the history is the client's (tools, system, …)`,
      );
      t.equal(credential(up.headers), credential(client.headers), `call ${i}: the credential arrived unchanged`);
      t.notOk(
        Object.keys(up.headers).some((h) => h.startsWith('x-compactor')),
        `call ${i}: none of Compactor's headers went upstream`,
      );
      if (client.compactor === 'unchanged') t.ok(up.raw.equals(client.body), `call ${i}: not reduced, so the client's bytes`);
      const format = PREFIX[name] === '/openai' ? 'openai-responses' : 'anthropic';
      const valid = await app.inject({ method: 'POST', url: '/v1/validate', payload: { messages: historyOf(json), format } });
      t.same(
        valid.json(),
        { valid: true, format, violations: [], warnings: (valid.json() as { warnings: unknown[] }).warnings },
        `call ${i}: a valid history`,
      );
      // The cached prefix: this call extends the previous one of its conversation, unless it reduced.
      const prev = upstream
        .slice(0, i)
        .reverse()
        .find((r) => r.cache && up.cache && conversationOf(r) === conversationOf(up));
      if (!prev) continue;
      const before = historyOf(asObject(prev.json) as Record<string, unknown>).map(normalized);
      const now = historyOf(json).map(normalized);
      const extends_ = before.length <= now.length && before.every((m, k) => m === now[k]);
      if (!extends_) {
        prefixBreaks++;
        t.equal(client.compactor, 'reduced', `call ${i}: the upstream history changed only because the proxy reduced it`);
      }
    }
    t.ok(prefixBreaks <= reduced, `prefix breaks (${prefixBreaks}) no more than reductions (${reduced})`);
  });
}

/** The fake's conversation of a recorded request (its session id, or first message). */
function conversationOf(r: RecordedRequest): string {
  const session = r.headers['x-claude-code-session-id'] ?? r.headers['session-id'] ?? r.headers['x-session-id'];
  return `${String(session)}|${normalized(historyOf(asObject(r.json) as Record<string, unknown>)[0] ?? null)}`;
}
