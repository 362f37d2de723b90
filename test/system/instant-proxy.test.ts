import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { recognizeCompaction } from '../../src/proxy/compaction/recognize.js';
import { PROVIDERS } from '../../src/proxy/providers.js';
import { build, fakeLlm } from '../support/app.js';
import { installClient, registryReachable } from '../support/clients.js';
import { FakeProvider } from '../support/fake-provider.js';
import { type InstantAgent, PROMPT, runInstantAgent } from '../support/instant-agents.js';
import { countedSteps, TASK_MARK } from '../support/instant-front.js';
import { listen } from '../support/net.js';
import { asObject, historyOf } from '../support/provider/parse.js';
import type { JsonValue, RecordedRequest, Scenario } from '../support/provider/types.js';
import { Recorder, type Sent } from '../support/recorder.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * The pinned agents (Claude Code 2.1.332; Codex 0.171.0 through a custom provider, its local
 * compaction, and through its built-in one, its `compaction_trigger`) run offline THROUGH THE REAL
 * PROXY (a started Compactor whose LLM summarizer is a fake OpenAI-compatible server) against the
 * fake provider, made to take 20 s to answer a compaction request, with their auto-compaction set
 * low: each session compacts at least twice, and each compaction request is answered by Compactor
 * from the summary it kept rolling (the provider never receives one, so none waited its 20 s), the
 * session completes, each answer holds the task text and names the artifact of the range it
 * summarized, that artifact gives the range back byte-exact, and every upstream request passes its
 * provider's schema with no Compactor-sealed item in it. With the opt-out (the header, or the
 * option where the agent sends no header of ours), the compaction requests reach the provider
 * byte-identical. A recording hop in front of the proxy keeps what the agent sent.
 */

const SLOW_COMPACTION_MS = 20_000;

const provider = (agent: InstantAgent) => (agent === 'claude-code' ? 'anthropic' : 'openai');

/** Whether a request the agent sent (or the provider received) is the agent's own compaction request. */
function isCompaction(name: 'anthropic' | 'openai', url: string, headers: Sent['headers'], body: unknown): boolean {
  return (
    recognizeCompaction(name, new URL(url, 'http://x').pathname.replace(/^\/(anthropic|openai)/, ''), headers, body) !== undefined
  );
}

/**
 * `countedSteps`, with a compaction request (should one reach the provider) answered after
 * `delayMs` as the provider would: text, or for the trigger form exactly one `compaction` item.
 */
function providerCompaction(inner: Scenario, delayMs: number): Scenario {
  return async (request) => {
    const name = request.wire === 'anthropic' ? 'anthropic' : 'openai';
    const recognized = recognizeCompaction(name, new URL(request.url, 'http://x').pathname, request.headers, request.body);
    if (recognized?.form === 'trigger') return { compaction: `fake-provider-compaction-${request.seq}`, delayMs };
    if (recognized) return { text: `${TASK_MARK} summary written by the provider`, delayMs };
    return inner(request);
  };
}

/**
 * Claude Code compacts from the usage it is told (`inflateAt`: the shell calls whose answer reports
 * 190,000 prompt tokens): after its third and seventh calls, so that each compaction has calls
 * before its newest for a summary to cover. Codex compacts at its own token limit.
 */
const CASES: { agent: InstantAgent; steps: number; inflateAt: number[] }[] = [
  { agent: 'claude-code', steps: 10, inflateAt: [4, 8] },
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

/** The proxy (fake LLM summarizer) in front of `fake`, and a recording hop in front of the proxy. */
async function stand(t: Test, fake: FakeProvider, options: string): Promise<{ app: FastifyInstance; recorder: Recorder }> {
  const llm = await fakeLlm(t);
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    COMPACTOR_PROXY_OPTIONS: options,
  });
  const { base } = await listen(app);
  const recorder = await new Recorder(base).start();
  t.teardown(() => recorder.stop());
  return { app, recorder };
}

/** The agent's own compaction requests, as it sent them. */
function compactionsSent(agent: InstantAgent, recorder: Recorder): Sent[] {
  return recorder.sent.filter((s) => {
    if (s.method !== 'POST') return false;
    let body: unknown;
    try {
      body = JSON.parse(s.body.toString('utf8'));
    } catch {
      return false;
    }
    return isCompaction(provider(agent), s.url, s.headers, body);
  });
}

const POINTER = 'The messages this summary stands for';

/** The texts (JSON strings) of the upstream messages that hold one of Compactor's answers, by the artifact each names last. */
function answersUpstream(upstream: readonly RecordedRequest[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of upstream) {
    const body = asObject(r.json);
    if (!body || !r.wire) continue;
    for (const m of historyOf(r.wire, body)) {
      const json = JSON.stringify(m);
      if (!json.includes(POINTER)) continue;
      const id = [...json.matchAll(/stands for[^.]*?(art_[0-9a-f]{24})/g)].at(-1)?.[1];
      if (id && !out.has(id)) out.set(id, json);
    }
  }
  return out;
}

/**
 * Whether `range` (an artifact's messages) is a run of one upstream history, message for message
 * as the summary covered it (cache markers left out, as the proxy compares histories), skipping
 * only the pinned instructions the rolling summary leaves out of its range.
 */
function holdsRange(name: 'anthropic' | 'openai', history: readonly JsonValue[], range: readonly unknown[]): boolean {
  const { normalized } = PROVIDERS[name].markers;
  const want = range.map((m) => JSON.stringify(m));
  const have = history.map((m) => normalized(m));
  const pinned = (m: JsonValue) => ['system', 'developer'].includes(String(asObject(m)?.role));
  for (let start = have.indexOf(want[0] ?? ''); start >= 0; start = have.indexOf(want[0] ?? '', start + 1)) {
    let i = start;
    let k = 0;
    while (i < have.length && k < want.length) {
      if (have[i] === want[k]) k++;
      else if (!pinned(history[i] as JsonValue)) break;
      i++;
    }
    if (k === want.length) return true;
  }
  return false;
}

for (const c of CASES) {
  t.test(`${c.agent} through the proxy: its compactions answered by Compactor`, async (t) => {
    if (!(await installed(t, c.agent))) return;
    const scenario = providerCompaction(countedSteps(c.steps, c.inflateAt, 190_000), SLOW_COMPACTION_MS);
    const fake = await new FakeProvider({ scenario }).start();
    t.teardown(() => fake.stop());
    // The sessions are short: their summary is kept rolling from their first calls.
    const { app, recorder } = await stand(t, fake, '{"context_window": 200000, "instant_compaction_share": 0.02}');
    const started = performance.now();
    const run = await runInstantAgent(c.agent, `${recorder.url}/${provider(c.agent)}`);
    const seconds = (performance.now() - started) / 1000;
    t.equal(run.timedOut, false, 'the session ends by itself');
    t.equal(run.exitCode, 0, 'and completes', { stderr: run.stderr.slice(-1500) });

    const sent = compactionsSent(c.agent, recorder);
    t.ok(sent.length >= 2, `it compacted at least twice (${sent.length})`);
    t.same(
      sent.map((s) => s.compactor),
      sent.map(() => 'compaction-answered'),
      'each compaction request answered by Compactor',
    );
    const metric = await app.metrics.registry.getSingleMetricAsString('compactor_proxy_compactions_total');
    t.match(metric, new RegExp(`outcome="answered"\\} ${sent.length}(\\n|$)`), 'and counted so');
    const upstream = fake.modelRequests();
    const reached = upstream.filter((r) => isCompaction(provider(c.agent), r.url, r.headers, r.json));
    t.equal(
      reached.length,
      0,
      `the provider never received a compaction request (none waited its ${SLOW_COMPACTION_MS / 1000} s)`,
    );

    // Each answer, as the agent carried it on: the task text, and the artifact of its range.
    const answers = answersUpstream(upstream);
    t.ok(answers.size >= 2, `the session went on from each answer (${answers.size} distinct)`);
    for (const [id, text] of answers) {
      t.ok(text.includes(PROMPT), `the answer naming ${id} holds the task text`);
      const res = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
      t.equal(res.statusCode, 200, `its artifact ${id} reads back`);
      const view = res.json() as { content: { messages: unknown[] }; sha256: string };
      const sha = createHash('sha256').update(JSON.stringify(view.content)).digest('hex');
      t.equal(sha, view.sha256, 'what it gives back are the bytes it stored');
      const range = view.content.messages;
      t.ok(range.length > 0, `it holds the summarized range (${range.length} messages)`);
      t.ok(
        upstream.some((r) => {
          const body = asObject(r.json);
          return body && r.wire ? holdsRange(provider(c.agent), historyOf(r.wire, body), range) : false;
        }),
        'byte-exact: each message as the agent sent it',
      );
    }

    // Every upstream request: valid for its provider, no item sealed by Compactor.
    for (const r of upstream) {
      const body = asObject(r.json);
      if (!body || !r.wire) continue;
      t.equal(JSON.stringify(body).includes('cmpx1.'), false, `request ${r.seq} holds no sealed item`);
      const history = historyOf(r.wire, body).filter((m) => asObject(m)?.type !== 'additional_tools');
      const errors = schemaErrors(r.wire === 'openai-responses' ? 'openai-responses' : 'anthropic', history);
      if (errors.length > 0) t.same(errors, [], `request ${r.seq} passes the provider schema`);
    }
    const times = sent.map((s) => `${(s.ms ?? Number.NaN).toFixed(0)} ms`).join(', ');
    t.comment(
      `${c.agent}: ${sent.length} compaction requests took ${times} (the provider: ${SLOW_COMPACTION_MS / 1000} s); ${upstream.length} upstream requests; session ${seconds.toFixed(1)} s`,
    );
  });

  // Passed on, the agent's own compaction is the provider's: answered at its normal speed here (the 20 s is not what is proved).
  const optOut = c.agent === 'codex-trigger' ? 'the option off' : 'the opt-out header';
  t.test(`${c.agent} through the proxy with ${optOut}: its compaction requests reach the provider byte-identical`, async (t) => {
    if (!(await installed(t, c.agent))) return;
    const fake = await new FakeProvider({ scenario: providerCompaction(countedSteps(c.steps, c.inflateAt, 190_000), 0) }).start();
    t.teardown(() => fake.stop());
    const header = c.agent !== 'codex-trigger';
    const options = { context_window: 200000, instant_compaction_share: 0.02, ...(header ? {} : { instant_compaction: false }) };
    const { app, recorder } = await stand(t, fake, JSON.stringify(options));
    const run = await runInstantAgent(c.agent, `${recorder.url}/${provider(c.agent)}`, { optOut: header });
    t.equal(run.timedOut, false, 'the session ends by itself');
    t.equal(run.exitCode, 0, 'and completes', { stderr: run.stderr.slice(-1500) });
    const sent = compactionsSent(c.agent, recorder);
    t.ok(sent.length >= 1, `it compacted (${sent.length})`);
    const reason = header ? 'opted-out' : 'off';
    t.same(
      sent.map((s) => s.compactor),
      sent.map(() => `compaction-passed; reason=${reason}`),
      `each passed (${reason})`,
    );
    const received = fake.modelRequests().map((r) => r.raw);
    for (const [i, s] of sent.entries()) {
      t.ok(
        received.some((raw) => raw.equals(s.body)),
        `compaction request ${i + 1} reached the provider byte-identical`,
      );
    }
    const metric = await app.metrics.registry.getSingleMetricAsString('compactor_proxy_compactions_total');
    t.match(metric, new RegExp(`outcome="passed_${reason.replace('-', '_')}"\\} ${sent.length}(\\n|$)`));
  });
}
