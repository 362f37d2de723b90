/**
 * Zero-wait benchmark (issue 22, "Zero-wait summaries"): does preparing summaries off the request
 * path keep the agent from ever waiting on the summarizer, at the same bill?
 *
 * The longest corpus runs (ZW_RUNS, default 3: the most model calls, one format per transcript,
 * Anthropic preferred) are replayed call by call through `POST /v1/fit` of a child service
 * (`node dist/server.js`, store `memory:`, a fixed artifact secret, one API key per replay so that
 * no replay finds another's summaries), exactly as bench/cost-replay.mjs's `fit-default-every`
 * replays them (bench/lib/cost-model.mjs: the same calls, view, provider cache and bill; window
 * 32k, `target_fraction` 0.6, policy cost with Anthropic-style `pricing`, `cache: {enabled}`, and
 * the previous call's `usage`), once with `prepare: {enabled: true}` and once with
 * `prepare: {enabled: false}`. The summarizer is bench/lib/fake-llm.mjs (real HTTP, OpenAI
 * compatible) answering each call after ZW_SUMMARIZER_MS (1500 ms). The agent spends ZW_AGENT_MS
 * (300 ms) on each model call: the next fit request goes out that long after the previous one
 * answered (checking the output with `POST /v1/validate` happens within that time).
 *
 * Measured per replay: fit calls; those whose HTTP wall time exceeds 1 s; max and median fit
 * latency; splices (`prepared.state: spliced`); fit calls that called the summarizer on the request
 * path (`usage.calls` beyond `usage.prepared.calls`); summarizer calls the fake answered, all of
 * them (prepared ones never spliced included); prepared summaries never spliced (wasted); calls
 * over the window; outputs `/v1/validate` found invalid; and the bill (relative units, input 1,
 * cached 0.1, write 1.25, output 5): the model calls as the cost model bills them plus every
 * summarizer call the fake answered (prompt × 1 + completion × 5), so a prepared summary that was
 * never used is paid for too. The service's own usage-based bill is in the JSON (`bill_reported`).
 *
 * Goals (the issue's): with preparing on, no fit call over 1 s where preparing off has some; the
 * summed bill within 2% of preparing off; no call over the window; every output valid.
 *
 * Usage: npm run build && node bench/zero-wait.mjs
 * Env: ZW_RUNS (3), ZW_FILES (regex on "openai/<file>" / "anthropic/<file>": replaces the choice of
 *      the longest), ZW_MAX_CALLS (cap on model calls per run, 0 = none: the default), ZW_AGENT_MS
 *      (300), ZW_SUMMARIZER_MS (1500), ZW_OUT (JSON path; default bench/out/zero-wait-<commit>.json);
 *      diagnostics: ZW_PREPARE_AT_TOKENS (`prepare.at: {tokens}` in the "on" replay), ZW_WAIT_MS
 *      (`prepare.wait_ms` there).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startFakeLlm, summarizerEnv } from './lib/fake-llm.mjs';
import { runMeta } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';
import { keyOf, MODES, replayOne, settingsFromEnv, WINDOW } from './lib/zero-wait-replay.mjs';
import { report } from './lib/zero-wait-table.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);

async function main() {
  const { runs, capNote, maxCalls, agentMs, summarizerMs, prepareOn } = settingsFromEnv();
  for (const note of capNote) log(note);
  const fake = await startFakeLlm({ delayMs: summarizerMs });
  const server = await startServer('compactor', {
    env: {
      COMPACTOR_STORE_URL: 'memory:',
      ...summarizerEnv(fake, {
        keys: runs.flatMap((r) => MODES.map((m) => keyOf(r.name, m))),
        secret: 'zero-wait-benchmark-fixed-artifact-secret-0001',
      }),
    },
  });
  const meta = {
    ...runMeta(),
    window: WINDOW,
    agent_ms: agentMs,
    summarizer_ms: summarizerMs,
    max_calls: maxCalls,
    prepare_on: prepareOn,
  };
  const results = [];
  try {
    for (const run of runs) {
      for (const mode of MODES) {
        const route = () => server.base;
        const r = await replayOne({ route, fake, run, mode, agentMs, prepareOn });
        log(
          `${run.name} prepare ${mode}: ${r.fits} fits, ${r.slow} > 1 s, max ${Math.round(r.max_ms)} ms, ${r.seconds.toFixed(0)} s`,
        );
        results.push(r);
      }
    }
  } finally {
    await server.stop();
    await fake.stop();
  }
  const { table, totals, goals } = report(results, MODES);
  console.log(
    `#### Zero-wait replay, commit ${meta.commit} (${meta.date})\n\nwindow ${WINDOW}, summarizer ${summarizerMs} ms per call, agent ${agentMs} ms per model call, \`prepare\` when on: \`${JSON.stringify(prepareOn)}\`${capNote.length ? `; ${capNote.join('; ')}` : ''}. Bills in thousands of relative units (Anthropic-style prices), summarizer calls billed as the fake answered them.\n\n${table}\n\ngoals: ${JSON.stringify(goals)}`,
  );
  meta.seconds = +((performance.now() - T0) / 1000).toFixed(1);
  const path = process.env.ZW_OUT ?? `${ROOT}bench/out/zero-wait-${meta.commit}.json`;
  mkdirSync(`${ROOT}bench/out`, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ meta, totals, goals, results }, null, 1)}\n`);
  log(`wrote ${path}`);
}

await main();
