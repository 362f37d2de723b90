/**
 * The zero-wait replay (issue 22), shared by bench/zero-wait.mjs (one service) and
 * bench/zero-wait-replicas.mjs (two replicas on Redis): the runs it replays, the agent that sends
 * each model call's history through `POST /v1/fit` (to whichever replica `route` names) and checks
 * the output, and what one replay measured. bench/zero-wait.mjs's header describes the model.
 */
import { createHash } from 'node:crypto';
import { CORPUS_DIR } from './corpus.mjs';
import { billOf, corpusRuns, fixedTokens, makeCounter, overOf, PRICES, replay } from './cost-model.mjs';
import { median } from './stats.mjs';

export const WINDOW = 32_000;
export const SLOW_MS = 1000;
export const PRICE = PRICES.anthropic;
export const MODES = ['on', 'off'];
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The runs: `files`'s (a regex source), else the `count` with the most model calls, one format per transcript. */
function chooseRuns({ files, count }) {
  if (files) return corpusRuns(CORPUS_DIR, { files: new RegExp(files) });
  const all = corpusRuns(CORPUS_DIR).sort(
    (a, b) => b.calls - a.calls || (a.format === 'anthropic' ? -1 : 0) - (b.format === 'anthropic' ? -1 : 0),
  );
  const seen = new Set();
  return all
    .filter((r) => {
      const base = r.name.replace(/^[^/]+\//, '');
      return !seen.has(base) && seen.add(base);
    })
    .slice(0, count);
}

/** The run cut after its first `max` model calls (0: whole). */
function capped(run, max) {
  if (!max || run.calls <= max) return { ...run, capped: false };
  let seen = 0;
  const end = run.messages.findIndex((m) => m.role === 'assistant' && ++seen > max);
  return { ...run, messages: run.messages.slice(0, end), calls: max, capped: true, full_calls: run.calls };
}

/**
 * The settings both zero-wait benchmarks read (bench/zero-wait.mjs's header lists them): the runs
 * (chosen and capped), the agent's and the summarizer's time, the `prepare` the "on" replay sends.
 */
export function settingsFromEnv(env = process.env) {
  const maxCalls = Number(env.ZW_MAX_CALLS ?? 0);
  const runs = chooseRuns({ files: env.ZW_FILES, count: Number(env.ZW_RUNS ?? 3) }).map((r) => capped(r, maxCalls));
  const at = env.ZW_PREPARE_AT_TOKENS ? Number(env.ZW_PREPARE_AT_TOKENS) : undefined;
  const wait = env.ZW_WAIT_MS ? Number(env.ZW_WAIT_MS) : undefined;
  return {
    runs,
    capNote: runs.filter((r) => r.capped).map((r) => `${r.name} capped at ${r.calls} of ${r.full_calls} calls`),
    maxCalls,
    agentMs: Number(env.ZW_AGENT_MS ?? 300),
    summarizerMs: Number(env.ZW_SUMMARIZER_MS ?? 1500),
    prepareOn: {
      enabled: true,
      ...(at !== undefined ? { at: { tokens: at } } : {}),
      ...(wait !== undefined ? { wait_ms: wait } : {}),
    },
  };
}

/** The API key of one replay: no replay finds another's summaries. */
export const keyOf = (run, mode) => `zw-${createHash('sha1').update(`${run}\n${mode}`).digest('hex').slice(0, 20)}`;

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
export async function settled(fake, boundMs = 60_000) {
  const until = performance.now() + boundMs;
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
  throw new Error(`the summarizer did not settle in ${boundMs / 1000} s`);
}

/**
 * The agent as a reducer for the cost model's replay: model time, then fit (timed) on the replica
 * `route(call)` names, then the output checked there. `beforeCall(call)` runs first (the kill
 * scenario kills a replica there, between two requests).
 */
function agent({ route, run, mode, rec, agentMs, prepareOn, beforeCall }) {
  const key = keyOf(run.name, mode);
  const pricing = { input: PRICE.input, cached_input: PRICE.cached, cache_write: PRICE.write, output: PRICE.output };
  const options = { format: run.format, model: run.model, context_window: WINDOW, target_fraction: 0.6, pricing };
  let lastEnd = 0;
  return async (view, { usage }) => {
    // The previous model call: the agent comes back `agentMs` after fit last answered.
    await sleep(Math.max(0, lastEnd + agentMs - performance.now()));
    const call = rec.fits.length;
    await beforeCall?.(call);
    const base = route(call);
    const rest = JSON.stringify({
      ...options,
      cache: { enabled: true },
      prepare: mode === 'on' ? prepareOn : { enabled: false },
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
      at: t0,
      base,
      applied: res.applied,
      prepared: res.prepared?.state ?? null,
      id: res.prepared?.id ?? null,
      covers: res.prepared?.covers,
      billed_prepared_calls: res.usage?.prepared?.calls ?? 0,
      on_path: onPath,
      reason: res.reason ?? null,
      decision: res.cost?.decision ?? null,
      occupancy: res.tokens?.before,
      call_again_at: res.call_again_at,
    });
    if (res.prepared?.id) rec.prepared.add(res.prepared.id);
    const sent = res.applied ? res.messages : view.map((e) => e.msg);
    const check = await post(base, '/v1/validate', JSON.stringify({ format: run.format, messages: sent }), key);
    if (!check.valid) rec.invalid++;
    return res;
  };
}

/** What became of the prepared summaries a replay started (GET /v1/prepared/{id}): counts by state, and each view. */
async function preparedStates(base, ids, key) {
  const states = {};
  const views = {};
  for (const id of ids) {
    const res = await fetch(`${base}/v1/prepared/${id}`, { headers: { authorization: `Bearer ${key}` } });
    const view = await res.json();
    const s = res.status === 200 ? view.state : `http ${res.status}`;
    states[s] = (states[s] ?? 0) + 1;
    views[id] = res.status === 200 ? { state: view.state, covers: view.covers, calls: view.usage?.calls ?? 0 } : { state: s };
  }
  return { states, views };
}

/**
 * Replays one run in one mode. `route(call)` is the base URL of the replica that serves a call
 * (`alive()` the one asked afterwards), `fake` the summarizer whose requests since the start are
 * this replay's. Returns what bench/lib/zero-wait-table.mjs tabulates, with the trace.
 */
export async function replayOne({ route, alive = () => route(0), fake, run, mode, agentMs, prepareOn, beforeCall }) {
  const rec = { fits: [], prepared: new Set(), invalid: 0 };
  const from = fake.requests.length;
  const t0 = performance.now();
  const { calls, rec: policy } = await replay({
    messages: run.messages,
    fixed: fixedTokens(run),
    count: makeCounter(run.format),
    reduce: agent({ route, run, mode, rec, agentMs, prepareOn, beforeCall }),
    usageStyle: 'anthropic',
  });
  const seconds = (performance.now() - t0) / 1000;
  await settled(fake);
  const summ = fake.requests.slice(from);
  const summBill = summ.reduce((n, r) => n + r.prompt_tokens * PRICE.input + r.completion_tokens * PRICE.output, 0);
  const reported = billOf(calls, PRICE);
  const ms = rec.fits.map((f) => f.ms);
  const slow = rec.fits.filter((f) => f.ms > SLOW_MS);
  const { states, views } = await preparedStates(alive(), rec.prepared, keyOf(run.name, mode));
  return {
    run: run.name,
    mode,
    calls: calls.length,
    fits: rec.fits.length,
    slow: slow.length,
    slow_calls: slow.map((f) => ({ call: rec.fits.indexOf(f), ...f, ms: Math.round(f.ms) })),
    trace: rec.fits.map((f, call) => ({ call, ...f, ms: Math.round(f.ms), at: undefined })),
    max_ms: Math.max(...ms),
    p50_ms: median(ms),
    splices: rec.fits.filter((f) => f.prepared === 'spliced').length,
    on_path_fits: rec.fits.filter((f) => f.on_path > 0).length,
    summarizer_calls: summ.length,
    summarizer_records: summ.map(({ messages: _, ...r }) => r),
    summarizer_calls_reported: policy.summarizer_calls,
    prepared: states,
    prepared_views: views,
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
