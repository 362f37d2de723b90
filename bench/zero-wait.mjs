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
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { billOf, corpusRuns, fixedTokens, makeCounter, overOf, PRICES, replay } from './lib/cost-model.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { runMeta } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';
import { median } from './lib/stats.mjs';
import { report } from './lib/zero-wait-table.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WINDOW = 32_000;
const SLOW_MS = 1000;
const PRICE = PRICES.anthropic;
const RUNS = Number(process.env.ZW_RUNS ?? 3);
const MAX_CALLS = Number(process.env.ZW_MAX_CALLS ?? 0);
const AGENT_MS = Number(process.env.ZW_AGENT_MS ?? 300);
const SUMMARIZER_MS = Number(process.env.ZW_SUMMARIZER_MS ?? 1500);
const MODES = ['on', 'off'];
/** Diagnostics: the `prepare.at` (tokens) and `prepare.wait_ms` the "on" replay sends (unset: the service's defaults). */
const AT_TOKENS = process.env.ZW_PREPARE_AT_TOKENS ? Number(process.env.ZW_PREPARE_AT_TOKENS) : undefined;
const WAIT_MS = process.env.ZW_WAIT_MS ? Number(process.env.ZW_WAIT_MS) : undefined;
const PREPARE_ON = {
  enabled: true,
  ...(AT_TOKENS !== undefined ? { at: { tokens: AT_TOKENS } } : {}),
  ...(WAIT_MS !== undefined ? { wait_ms: WAIT_MS } : {}),
};
const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The runs: ZW_FILES's, else the ZW_RUNS with the most model calls, one format per transcript. */
function chooseRuns() {
  if (process.env.ZW_FILES) return corpusRuns(CORPUS_DIR, { files: new RegExp(process.env.ZW_FILES) });
  const all = corpusRuns(CORPUS_DIR).sort(
    (a, b) => b.calls - a.calls || (a.format === 'anthropic' ? -1 : 0) - (b.format === 'anthropic' ? -1 : 0),
  );
  const seen = new Set();
  return all
    .filter((r) => {
      const base = r.name.replace(/^[^/]+\//, '');
      return !seen.has(base) && seen.add(base);
    })
    .slice(0, RUNS);
}

/** The run cut after its first `max` model calls (0: whole). */
function capped(run, max) {
  if (!max || run.calls <= max) return { ...run, capped: false };
  let seen = 0;
  const end = run.messages.findIndex((m) => m.role === 'assistant' && ++seen > max);
  return { ...run, messages: run.messages.slice(0, end), calls: max, capped: true, full_calls: run.calls };
}

const keyOf = (run, mode) => `zw-${createHash('sha1').update(`${run}\n${mode}`).digest('hex').slice(0, 20)}`;

async function post(base, path, body, key) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** Waits until the fake has answered everything it was asked (background jobs included) and nothing new came for 1 s. */
async function settled(fake) {
  const until = performance.now() + 60_000;
  let n = -1;
  let quietSince = performance.now();
  while (performance.now() < until) {
    const busy = fake.requests.some((r) => !Number.isFinite(r.end));
    if (busy || fake.requests.length !== n) {
      n = fake.requests.length;
      quietSince = performance.now();
    } else if (performance.now() - quietSince > 1000) return;
    await sleep(100);
  }
  throw new Error('the summarizer did not settle in 60 s');
}

/** The agent as a reducer for the cost model's replay: model time, then fit (timed), then the output checked. */
function agent(base, run, mode, rec) {
  const key = keyOf(run.name, mode);
  const pricing = { input: PRICE.input, cached_input: PRICE.cached, cache_write: PRICE.write, output: PRICE.output };
  const options = { format: run.format, model: run.model, context_window: WINDOW, target_fraction: 0.6, pricing };
  let lastEnd = 0;
  return async (view, { usage }) => {
    // The previous model call: the agent comes back AGENT_MS after fit last answered.
    await sleep(Math.max(0, lastEnd + AGENT_MS - performance.now()));
    const rest = JSON.stringify({
      ...options,
      cache: { enabled: true },
      prepare: mode === 'on' ? PREPARE_ON : { enabled: false },
      ...(usage ? { usage } : {}),
    });
    const body = `{"messages":[${view.map((e) => e.key).join(',')}],${rest.slice(1)}`;
    const t0 = performance.now();
    const res = await post(base, '/v1/fit', body, key);
    lastEnd = performance.now();
    const ms = lastEnd - t0;
    const onPath = (res.usage?.calls ?? 0) - (res.usage?.prepared?.calls ?? 0);
    rec.fits.push({
      ms,
      applied: res.applied,
      prepared: res.prepared?.state ?? null,
      covers: res.prepared?.covers,
      on_path: onPath,
      reason: res.reason ?? null,
      decision: res.cost?.decision ?? null,
      occupancy: res.tokens?.before,
    });
    if (res.prepared?.id) rec.prepared.add(res.prepared.id);
    const sent = res.applied ? res.messages : view.map((e) => e.msg);
    const check = await post(base, '/v1/validate', JSON.stringify({ format: run.format, messages: sent }), key);
    if (!check.valid) rec.invalid++;
    return res;
  };
}

/** What became of the prepared summaries a replay started: GET /v1/prepared/{id}. */
async function preparedStates(base, ids, key) {
  const states = {};
  for (const id of ids) {
    const res = await fetch(`${base}/v1/prepared/${id}`, { headers: { authorization: `Bearer ${key}` } });
    const view = await res.json();
    const s = res.status === 200 ? view.state : `http ${res.status}`;
    states[s] = (states[s] ?? 0) + 1;
  }
  return states;
}

async function replayOne(base, fake, run, mode) {
  const rec = { fits: [], prepared: new Set(), invalid: 0 };
  const from = fake.requests.length;
  const count = makeCounter(run.format);
  const t0 = performance.now();
  const { calls, rec: policy } = await replay({
    messages: run.messages,
    fixed: fixedTokens(run),
    count,
    reduce: agent(base, run, mode, rec),
    usageStyle: 'anthropic',
  });
  const seconds = (performance.now() - t0) / 1000;
  await settled(fake);
  const summ = fake.requests.slice(from);
  const summBill = summ.reduce((n, r) => n + r.prompt_tokens * PRICE.input + r.completion_tokens * PRICE.output, 0);
  const reported = billOf(calls, PRICE);
  const ms = rec.fits.map((f) => f.ms);
  const slow = rec.fits.filter((f) => f.ms > SLOW_MS);
  return {
    run: run.name,
    mode,
    calls: calls.length,
    fits: rec.fits.length,
    slow: slow.length,
    slow_calls: slow.map((f) => ({ call: rec.fits.indexOf(f), ...f, ms: Math.round(f.ms) })),
    trace: rec.fits.map((f, call) => ({ call, ...f, ms: Math.round(f.ms) })),
    max_ms: Math.max(...ms),
    p50_ms: median(ms),
    splices: rec.fits.filter((f) => f.prepared === 'spliced').length,
    on_path_fits: rec.fits.filter((f) => f.on_path > 0).length,
    summarizer_calls: summ.length,
    summarizer_calls_reported: policy.summarizer_calls,
    prepared: await preparedStates(base, rec.prepared, keyOf(run.name, mode)),
    over: overOf(calls, WINDOW),
    invalid: rec.invalid,
    errors: policy.errors,
    bill: reported.model + summBill,
    bill_model: reported.model,
    bill_summarizer: summBill,
    bill_reported: reported.bill,
    seconds,
  };
}

async function main() {
  const runs = chooseRuns().map((r) => capped(r, MAX_CALLS));
  for (const r of runs.filter((x) => x.capped)) log(`${r.name}: capped at ${r.calls} of ${r.full_calls} model calls`);
  const fake = await startFakeLlm({ delayMs: SUMMARIZER_MS });
  const server = await startServer('compactor', {
    env: {
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: 'memory:',
      OPENAI_BASE_URL: fake.url,
      OPENAI_API_KEY: 'x',
      COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
      COMPACTOR_SUMMARIZER_TIMEOUT_MS: '30000',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
      COMPACTOR_API_KEYS: runs.flatMap((r) => MODES.map((m) => keyOf(r.name, m))).join(','),
      COMPACTOR_ARTIFACT_SECRET: 'zero-wait-benchmark-fixed-artifact-secret-0001',
    },
  });
  const meta = {
    ...runMeta(),
    window: WINDOW,
    agent_ms: AGENT_MS,
    summarizer_ms: SUMMARIZER_MS,
    max_calls: MAX_CALLS,
    prepare_on: PREPARE_ON,
  };
  const results = [];
  try {
    for (const run of runs) {
      for (const mode of MODES) {
        const r = await replayOne(server.base, fake, run, mode);
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
  const capNote = runs.filter((r) => r.capped).map((r) => `${r.name} capped at ${r.calls} of ${r.full_calls} calls`);
  console.log(
    `#### Zero-wait replay, commit ${meta.commit} (${meta.date})\n\nwindow ${WINDOW}, summarizer ${SUMMARIZER_MS} ms per call, agent ${AGENT_MS} ms per model call, \`prepare\` when on: \`${JSON.stringify(PREPARE_ON)}\`${capNote.length ? `; ${capNote.join('; ')}` : ''}. Bills in thousands of relative units (Anthropic-style prices), summarizer calls billed as the fake answered them.\n\n${table}\n\ngoals: ${JSON.stringify(goals)}`,
  );
  meta.seconds = +((performance.now() - T0) / 1000).toFixed(1);
  const path = process.env.ZW_OUT ?? `${ROOT}bench/out/zero-wait-${meta.commit}.json`;
  mkdirSync(`${ROOT}bench/out`, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ meta, totals, goals, results }, null, 1)}\n`);
  log(`wrote ${path}`);
}

await main();
