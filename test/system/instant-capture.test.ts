import t from 'tap';
import { installClient, registryReachable } from '../support/clients.js';
import { type InstantAgent, runInstantAgent } from '../support/instant-agents.js';
import { countedSteps, InstantFront, TASK_MARK } from '../support/instant-front.js';
import { asObject, historyOf } from '../support/provider/parse.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * Re-captures what the pinned agents send when they compact by themselves (Claude Code 2.1.332's
 * auto-compaction; Codex 0.171.0 through a custom provider and through its built-in one), offline,
 * with the instant-compaction modules in front of the fake provider (test/support/instant-front.ts):
 * recognition must still hold on the real requests (each session compacts at least twice), each
 * answer must be taken (the session goes on and completes, its later requests carry the prepared
 * summary's task text), no compaction request and no Compactor-sealed item reaches the provider,
 * and every upstream request's history passes its provider's schema. Captures stay in memory.
 */

const CASES: { agent: InstantAgent; form: string; steps: number; inflateAt: number[] }[] = [
  { agent: 'claude-code', form: 'summary', steps: 6, inflateAt: [2, 5] },
  { agent: 'codex-local', form: 'local', steps: 8, inflateAt: [] },
  { agent: 'codex-trigger', form: 'trigger', steps: 8, inflateAt: [] },
];

for (const c of CASES) {
  t.test(`${c.agent}: its own compaction requests are recognised and answered`, async (t) => {
    try {
      await installClient(c.agent === 'claude-code' ? 'claude-code' : 'codex');
    } catch (error) {
      const registry = await registryReachable();
      if (registry.ok) throw error;
      t.pass('installed', { skip: `the npm registry is unreachable (${registry.reason})` });
      return;
    }
    const front = await new InstantFront(countedSteps(c.steps, c.inflateAt, 190_000)).start();
    t.teardown(() => front.stop());
    const run = await runInstantAgent(c.agent, front.url);
    t.equal(run.timedOut, false, 'the session ends by itself');
    t.equal(run.exitCode, 0, 'and completes', { stderr: run.stderr.slice(-1500) });

    const posts = front.records.filter((r) => r.json !== undefined);
    const answered = posts.filter((r) => r.answered);
    t.ok(answered.length >= 2, `it compacted at least twice (${answered.length})`);
    t.ok(
      answered.every((r) => r.recognized?.form === c.form),
      `each in the ${c.form} form`,
    );
    const firstAnswered = posts.findIndex((r) => r.answered);
    const later = posts.slice(firstAnswered + 1).filter((r) => !r.answered);
    t.ok(later.length > 0, 'the session went on after its compaction');
    if (c.form === 'trigger')
      t.ok(
        later.some((r) => r.replaced > 0),
        'its sealed item was replaced before forwarding',
      );

    // Upstream: the summary taken, no compaction request, no sealed item, every history valid.
    const upstream = front.provider.modelRequests();
    t.ok(
      upstream.some((r) => JSON.stringify(r.json).includes(TASK_MARK)),
      'a later request carries the summary it was given',
    );
    t.equal(upstream.length, posts.length - answered.length, 'every request but the compactions reached the provider');
    for (const r of upstream) {
      const body = asObject(r.json);
      if (!body || !r.wire) continue;
      t.equal(JSON.stringify(body).includes('cmpx1.'), false, `request ${r.seq} holds no sealed item`);
      const history = historyOf(r.wire, body).filter((m) => asObject(m)?.type !== 'additional_tools');
      const format = r.wire === 'openai-responses' ? 'openai-responses' : 'anthropic';
      const errors = schemaErrors(format, history);
      if (errors.length > 0) t.same(errors, [], `request ${r.seq} passes the provider schema`);
    }
    t.pass(`${upstream.length} upstream requests checked, ${answered.length} compactions answered`);
    t.comment(`answered in ${answered.map((r) => `${(r.answerMs ?? 0).toFixed(1)} ms`).join(', ')}`);
  });
}
