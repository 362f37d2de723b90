import t, { type Test } from 'tap';
import { CLIENTS, installClient, registryReachable } from '../support/clients.js';
import { LONG_AGENTS, PROXY_PREFIX, WINDOW } from '../support/long-session/config.js';
import { runSession, type Session } from '../support/long-session/driver.js';

/**
 * Issue 37's proof: Claude Code and Codex CLI (pinned, offline, against the fake provider) in a
 * long session of CALLS shell calls with large outputs, through Compactor's proxy (`node
 * dist/server.js`, an LLM summarizer taking 1.5 s per call), Codex configured as the README says
 * (no `model` line: a model Compactor's table does not know). Each proxied session must keep the
 * task text in every upstream request, never go over the window, never bypass, break the cached
 * prefix at most once per 4 calls, and never hold a request while a summarizer call runs. The
 * straight session (agent → provider, no compaction) is the baseline: it crosses the window, keeps
 * the task and never breaks its prefix, so the harness measures what the proxy changes.
 * bench/agents.mjs prices the same sessions (and the agents' own compaction) in bench/RESULTS.md.
 */

/** Tool calls per session (the 60): about 20 s each on two busy cores. */
const CALLS = 60;

/** The reduction budget raised so that a slow machine does not turn reductions into budget bypasses. */
const SERVICE_ENV = { COMPACTOR_PROXY_BUDGET_MS: '30000' };

function figures(s: Session): Record<string, unknown> {
  const f = s.figures;
  return {
    upstream: f.upstream,
    maxTokens: f.maxTokens,
    window: s.window,
    prefixBreaks: f.prefixBreaks,
    outcomes: f.outcomes,
    bypass: f.bypass,
    taskMissing: f.taskMissing.length,
    heldP50: f.heldP50,
    heldP99: f.heldP99,
    summarizerCalls: f.summarizerCalls,
  };
}

function completed(t: Test, s: Session): void {
  t.equal(s.run.timedOut, false, `${s.way}: the session finished`);
  t.equal(s.run.exitCode, 0, `${s.way}: the agent exits 0`, { stderr: s.run.stderr.slice(-2000) });
  const calls = s.upstream.filter((u) => u.kind === 'call').length;
  t.ok(calls >= CALLS + 1, `${s.way}: every scripted call reached the provider (${calls} model calls for ${CALLS} tool calls)`);
}

for (const agent of LONG_AGENTS) {
  const spec = CLIENTS[agent];
  t.test(`${agent}@${spec.pinned}: a ${CALLS}-call session, straight and through the proxy`, async (t) => {
    try {
      await installClient(agent);
    } catch (error) {
      const registry = await registryReachable();
      if (registry.ok) throw error;
      t.pass('installed', { skip: `${spec.pkg}@${spec.pinned} cannot be installed: ${registry.reason}` });
      return;
    }
    const straight = await runSession(agent, 'straight', { calls: CALLS, timeoutMs: 400_000 });
    completed(t, straight);
    t.ok(straight.figures.maxTokens > WINDOW[agent], `straight: the session crosses the window`, figures(straight));
    t.same(straight.figures.taskMissing, [], 'straight: the task text is in every request');
    t.equal(straight.figures.prefixBreaks, 0, 'straight: every request extends the previous one');

    const proxied = await runSession(agent, 'proxied', { calls: CALLS, timeoutMs: 400_000, serviceEnv: SERVICE_ENV });
    const f = proxied.figures;
    const seen = figures(proxied);
    completed(t, proxied);
    t.ok(
      proxied.client.every((c) => c.compactor !== undefined),
      `proxied: every model call went through ${PROXY_PREFIX[agent]} (an x-compactor header on each)`,
    );
    t.same(
      f.taskMissing,
      [],
      `proxied: the task text is in every upstream request (missing from ${f.taskMissing.length} of ${f.upstream})`,
      seen,
    );
    t.same(
      f.overWindow,
      [],
      `proxied: no upstream request over the window (${f.overWindow.length} over ${WINDOW[agent]}, max ${f.maxTokens})`,
      seen,
    );
    t.same(f.bypass, {}, `proxied: no bypass (${JSON.stringify(f.bypass)})`, seen);
    t.ok(
      f.prefixBreaks * 4 <= f.upstream,
      `proxied: at most 1 prefix break per 4 calls (${f.prefixBreaks} in ${f.upstream}; straight: ${straight.figures.prefixBreaks})`,
      seen,
    );
    t.same(
      f.waitedOnSummarizer,
      [],
      `proxied: no request held while a summarizer call runs (${f.waitedOnSummarizer.length} waited on one; ${f.heldWhileSummarizing.length} held ≥ 200 ms beside one; max hold ${f.heldMax} ms)`,
      seen,
    );
  });
}
