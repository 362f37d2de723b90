import t, { type Test } from 'tap';
import { recognizeCompaction } from '../../src/proxy/compaction/recognize.js';
import { build, fakeLlm } from '../support/app.js';
import { installClient, registryReachable } from '../support/clients.js';
import { FakeProvider } from '../support/fake-provider.js';
import { type InstantAgent, runInstantAgent } from '../support/instant-agents.js';
import { countedSteps, TASK_MARK } from '../support/instant-front.js';
import { listen } from '../support/net.js';
import { asObject, historyOf } from '../support/provider/parse.js';
import type { Scenario } from '../support/provider/types.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * The pinned agents (Claude Code 2.1.332; Codex 0.171.0 through a custom provider and through its
 * built-in one) run offline THROUGH THE REAL PROXY (a started Compactor whose LLM summarizer is a
 * fake OpenAI-compatible server) against the fake provider, made to take 20 s to answer a
 * compaction request: each session compacts at least twice, each compaction is answered by
 * Compactor (the provider never receives one), the session completes, and every later upstream
 * request passes its provider's schema. With the opt-out header, the compaction request reaches
 * the provider byte-identical.
 */

const SLOW_COMPACTION_MS = 20_000;

/** `countedSteps`, with a compaction request (should one reach the provider) answered after 20 s. */
function slowCompaction(inner: Scenario): Scenario {
  return async (request) => {
    const path = new URL(request.url, 'http://x').pathname;
    const provider = request.wire === 'anthropic' ? 'anthropic' : 'openai';
    if (recognizeCompaction(provider, path, request.headers, request.body))
      return { text: `${TASK_MARK} summary written by the provider`, delayMs: SLOW_COMPACTION_MS };
    return inner(request);
  };
}

const CASES: { agent: InstantAgent; steps: number; inflateAt: number[] }[] = [
  { agent: 'claude-code', steps: 6, inflateAt: [2, 5] },
  { agent: 'codex-local', steps: 8, inflateAt: [] },
  { agent: 'codex-trigger', steps: 8, inflateAt: [] },
];

async function installed(t: Test, agent: InstantAgent): Promise<boolean> {
  try {
    await installClient(agent === 'claude-code' ? 'claude-code' : 'codex');
    return true;
  } catch (error) {
    const registry = await registryReachable();
    if (registry.ok) throw error;
    t.pass('installed', { skip: `the npm registry is unreachable (${registry.reason})` });
    return false;
  }
}

/**
 * Unfinished (issue 38): the first compaction of each Codex form is answered by Compactor through
 * the real proxy; the second passes `none-ready` (no rolling summary of the compacted conversation
 * has content yet), and Claude Code's pass `none-ready` (its sessions compact after one or two
 * calls, and the `<system-reminder>` pinned after its own compaction ends every later range).
 * Marked todo so the lane shows it without failing.
 */
const TODO = 'rolling summary not ready for every compaction yet (see the comment above)';

for (const c of CASES) {
  t.test(`${c.agent} through the proxy: its compactions answered by Compactor`, { todo: TODO }, async (t) => {
    if (!(await installed(t, c.agent))) return;
    const fake = await new FakeProvider({ scenario: slowCompaction(countedSteps(c.steps, c.inflateAt, 190_000)) }).start();
    t.teardown(() => fake.stop());
    const llm = await fakeLlm(t);
    const app = await build(t, {
      COMPACTOR_STORE_URL: 'memory:',
      OPENAI_BASE_URL: llm.url,
      COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_PROXY_BUDGET_MS: '30000',
      // The sessions are short: their summary is kept prepared from their first calls.
      COMPACTOR_PROXY_OPTIONS: '{"context_window": 200000, "instant_compaction_share": 0.02}',
    });
    const { base } = await listen(app);
    const started = performance.now();
    const run = await runInstantAgent(c.agent, `${base}/${c.agent === 'claude-code' ? 'anthropic' : 'openai'}`);
    const seconds = (performance.now() - started) / 1000;
    t.equal(run.timedOut, false, 'the session ends by itself');
    t.equal(run.exitCode, 0, 'and completes', { stderr: run.stderr.slice(-1500) });

    const metric = await app.metrics.registry.getSingleMetricAsString('compactor_proxy_compactions_total');
    const answered = Number(/outcome="answered"\} (\d+)/.exec(metric)?.[1] ?? 0);
    t.ok(answered >= 2, `it compacted at least twice, each answered by Compactor (${answered}; ${metric.replace(/\n/g, ' ')})`);
    const upstream = fake.modelRequests();
    const compactions = upstream.filter((r) =>
      recognizeCompaction(
        r.wire === 'anthropic' ? 'anthropic' : 'openai',
        new URL(r.url, 'http://x').pathname,
        r.headers,
        r.json,
      ),
    );
    t.equal(compactions.length, 0, 'the provider never received a compaction request');
    t.ok(
      upstream.some((r) => JSON.stringify(r.json).includes('## Goal and constraints')),
      'a later request carries the summary Compactor answered with',
    );
    for (const r of upstream) {
      const body = asObject(r.json);
      if (!body || !r.wire) continue;
      t.equal(JSON.stringify(body).includes('cmpx1.'), false, `request ${r.seq} holds no sealed item`);
      const history = historyOf(r.wire, body).filter((m) => asObject(m)?.type !== 'additional_tools');
      const errors = schemaErrors(r.wire === 'openai-responses' ? 'openai-responses' : 'anthropic', history);
      if (errors.length > 0) t.same(errors, [], `request ${r.seq} passes the provider schema`);
    }
    t.comment(
      `${c.agent}: ${answered} compactions answered, ${upstream.length} upstream requests, session ${seconds.toFixed(1)} s`,
    );
  });
}
