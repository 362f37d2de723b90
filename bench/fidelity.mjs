/**
 * Fidelity benchmark: what survives summaries when the summarizer writes nothing useful.
 *
 * The Compactor (`node dist/server.js`, store `memory:`, a fixed artifact secret) has an LLM
 * summarizer pointing at a fake OpenAI-compatible server on 127.0.0.1 that answers every call with
 * the same prose naming nothing: whatever survives, the service put there. Two modes:
 *
 *  - single: each corpus transcript (test/fixtures/corpus/{openai,anthropic}/*.json, and, when
 *    run with the tsx loader, the Responses and Gemini conversions of test/support/convert.ts) is
 *    summarized once, `POST /v1/summarize` with `{keep: {messages: 10}, store: "none"}`: with the
 *    default `trail_tokens` (the artifact trail) and with `trail_tokens: 0` (the fact guard alone,
 *    what the service did before the trail). The summarized range is the messages whose action is
 *    `summarize`.
 *  - replay: each native corpus transcript is replayed call by call through `POST /v1/fit`, as an
 *    agent would run it (bench/lib/fidelity-replay.mjs: a fit call before each assistant message,
 *    context window 32k, `target_fraction` 0.6, policy cost with the usage a provider with prompt
 *    caching would report), so that rolling summaries fold earlier ones, after compaction has
 *    offloaded old outputs. At the end, the range is everything the final summary stands for,
 *    through every fold: `POST /v1/expand` on the head and the summary gives it back, byte-exact.
 *    Run with prepared summaries off (`prepare: {enabled: false}`: every summary made on the
 *    request path) and on (`prepare: {enabled: true}`, each mode on a service of its own): then
 *    the summarizer answers after FIDELITY_SUMMARIZER_MS and the agent spends FIDELITY_AGENT_MS on
 *    a model call while a summary is being prepared, so that summaries are prepared off the
 *    request path and spliced in by the call that needs them, as bench/zero-wait.mjs runs them;
 *    the splices, the summaries made on the request path and the deferred calls are counted from
 *    the fit responses.
 *
 * Measured, with an extractor written here (bench/lib/fidelity-extract.mjs, not the service's):
 * every string of the range is scanned for URLs and paths (a `/` and a file name with an
 * extension). Shares of them that appear verbatim in the summary: all paths and URLs; those inside
 * the agent's own tool calls' arguments; the files the agent modified or created (write/edit
 * tools' paths, shell redirections, `sed -i`, `tee`, `touch`, SWE-agent `create`, apply_patch
 * headers). Also the trail's and the summary's sizes in o200k tokens. Goals, in both modes: 100%
 * of files modified or created, >= 99% of tool-call identifiers, >= 95% median and >= 80% minimum
 * of all paths and URLs.
 *
 * Usage: npm run build && node --import tsx bench/fidelity.mjs
 *        (plain `node bench/fidelity.mjs` skips the converted transcripts)
 * Env: FIDELITY_MODE (single, replay, or both: the default), FIDELITY_KEEP (single: messages
 *      kept, default 10), FIDELITY_FILES (regex on the file name), FIDELITY_WINDOW (replay: 32000),
 *      FIDELITY_FRACTION (replay: target_fraction, 0.6), FIDELITY_POLICY (replay: cost, or tokens
 *      without usage), FIDELITY_LONG (replay: add bench/lib/generate.mjs's synthetic run of this
 *      many calls, seed 7, a stress row outside the goals; default 0), FIDELITY_PREPARE (replay:
 *      off, on, or both: the default), FIDELITY_SUMMARIZER_MS (prepare on: 1500),
 *      FIDELITY_AGENT_MS (prepare on: 300),
 *      FIDELITY_OUT (JSON path; default bench/out/fidelity-<commit>.json), BENCH_COMMIT.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { countTokens } from './lib/fake-llm.mjs';
import { corpusTranscripts, rangeIdentifiers, share, startLossyLlm, strings } from './lib/fidelity-extract.mjs';
import { replayFidelity } from './lib/fidelity-replay.mjs';
import { generateHistory } from './lib/generate.mjs';
import { commit } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CORPUS = CORPUS_DIR;
const MODE = process.env.FIDELITY_MODE ?? 'both';
const KEEP = Number(process.env.FIDELITY_KEEP ?? 10);
const FILES = new RegExp(process.env.FIDELITY_FILES ?? '.');
const WINDOW = Number(process.env.FIDELITY_WINDOW ?? 32_000);
const FRACTION = Number(process.env.FIDELITY_FRACTION ?? 0.6);
const POLICY = process.env.FIDELITY_POLICY ?? 'cost';
const LONG = Number(process.env.FIDELITY_LONG ?? 0);
const PREPARE = process.env.FIDELITY_PREPARE ?? 'both';
const SUMMARIZER_MS = Number(process.env.FIDELITY_SUMMARIZER_MS ?? 1500);
const AGENT_MS = Number(process.env.FIDELITY_AGENT_MS ?? 300);
const HEADING = '## Artifact trail (compactor)';

async function converted() {
  try {
    const { loadConverted } = await import('../test/support/convert.ts');
    return loadConverted().map((t) => ({
      file: t.file,
      body: { messages: t.messages, ...(t.system ? { system: t.system } : {}) },
    }));
  } catch {
    return [];
  }
}

/** The measures of a summary text over a range of wire messages. */
function measures(range, text) {
  const ids = rangeIdentifiers(range);
  const at = text.indexOf(HEADING);
  const trail = at < 0 ? '' : text.slice(at);
  return {
    range: range.length,
    all: share(ids.all, text),
    calls: share(ids.inCalls, text),
    changed: share(ids.changed, text),
    trail_tokens: countTokens(trail),
    summary_tokens: countTokens(text),
    trail,
  };
}

async function single(base, t, trailTokens) {
  const body = {
    ...t.body,
    keep: { messages: KEEP },
    store: 'none',
    ...(trailTokens === undefined ? {} : { trail_tokens: trailTokens }),
  };
  const res = await fetch(`${base}/v1/summarize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = await res.json();
  if (res.status !== 200) throw new Error(`${t.file}: HTTP ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
  if (!out.applied) return { skipped: out.reason };
  const range = out.actions.filter((a) => a.action === 'summarize').map((a) => t.body.messages[a.index]);
  return { ...measures(range, out.summary.text), facts: out.summary.facts };
}

/**
 * What the window stage dropped for good: its messages, and their paths and URLs that nothing the
 * final view expands to names (`null` when what expand gave back is not the transcript with gaps).
 */
function windowLoss(whole, dropped) {
  if (dropped === null) return null;
  const restorable = [];
  strings(whole, (s) => restorable.push(s));
  const text = restorable.join('\n');
  const lost = share(rangeIdentifiers(dropped).all, text);
  return { messages: dropped.length, paths: lost.n, lost: lost.n - lost.kept };
}

async function replay(base, t, prepare) {
  const options = {
    model: 'gpt-5',
    context_window: WINDOW,
    target_fraction: FRACTION,
    policy: POLICY,
    prepare: { enabled: prepare === 'on' },
  };
  const r = await replayFidelity(base, t, options, { agentMs: prepare === 'on' ? AGENT_MS : 0 });
  const { range, text, whole, dropped, ...rest } = r;
  if (r.skipped) return { ...rest, window: windowLoss(whole, dropped) };
  return { ...rest, ...measures(range, text), window: windowLoss(whole, dropped) };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : Number.NaN;
};
const sum = (xs) => xs.reduce((x, y) => x + y, 0);
const name = (file) => file.replace(/\.json$/, '').slice(0, 70);

/** The aggregates of measured rows (`pick` gives a row's measures) and the goals they meet. */
function aggregate(rows, pick) {
  const m = rows.map(pick);
  const weakest = rows.reduce((a, r) => (pick(r).all.share < pick(a).all.share ? r : a), rows[0]);
  const agg = {
    transcripts: rows.length,
    all_median: median(m.map((x) => x.all.share)),
    all_min: Math.min(...m.map((x) => x.all.share)),
    weakest: weakest?.file,
    calls_pooled: sum(m.map((x) => x.calls.kept)) / Math.max(1, sum(m.map((x) => x.calls.n))),
    calls_min: Math.min(...m.map((x) => x.calls.share)),
    changed_pooled: sum(m.map((x) => x.changed.kept)) / Math.max(1, sum(m.map((x) => x.changed.n))),
    trail_tokens_median: median(m.map((x) => x.trail_tokens)),
    trail_tokens_max: Math.max(...m.map((x) => x.trail_tokens)),
    summary_tokens_median: median(m.map((x) => x.summary_tokens)),
    summary_tokens_max: Math.max(...m.map((x) => x.summary_tokens)),
  };
  const goals = {
    changed_100: agg.changed_pooled === 1,
    calls_99: agg.calls_pooled >= 0.99,
    all_median_95: agg.all_median >= 0.95,
    all_min_80: agg.all_min >= 0.8,
  };
  return { agg, goals };
}

function singleTable(rows) {
  const measured = rows.filter((r) => !r.trail.skipped);
  const table = [
    '| transcript | range | paths+URLs | kept (guard only) | kept (trail) | in tool calls | kept (trail) | modified/created | kept (trail) | trail tokens |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of measured) {
    const { trail: a, guard: g } = r;
    table.push(
      `| ${name(r.file)} | ${a.range} | ${a.all.n} | ${pct(g.all.share)} | ${pct(a.all.share)} | ${a.calls.n} | ${pct(a.calls.share)} | ${a.changed.n} | ${pct(a.changed.share)} | ${a.trail_tokens} |`,
    );
  }
  const { agg, goals } = aggregate(measured, (r) => r.trail);
  const guard = aggregate(measured, (r) => r.guard).agg;
  Object.assign(agg, {
    skipped: rows.length - measured.length,
    all_median_guard: guard.all_median,
    all_min_guard: guard.all_min,
  });
  table.push(
    `| **median** (min) | | | ${pct(guard.all_median)} (${pct(guard.all_min)}) | ${pct(agg.all_median)} (${pct(agg.all_min)}) | | ${pct(agg.calls_pooled)} pooled (min ${pct(agg.calls_min)}) | | ${pct(agg.changed_pooled)} pooled | ${agg.trail_tokens_median} (max ${agg.trail_tokens_max}) |`,
  );
  return { table, agg, goals };
}

/**
 * Counts summed over rows: summaries spliced (then folded on the request path), made on the
 * request path, cached; deferred calls;
 * prepared summaries by state; messages the window dropped, and their paths and URLs lost.
 */
function preparedCounts(rows) {
  const c = {
    spliced: 0,
    folded: 0,
    on_path: 0,
    cached: 0,
    deferred: 0,
    last_spliced: 0,
    prepared: {},
    window_messages: 0,
    window_lost: 0,
  };
  for (const { replay: r } of rows) {
    c.window_messages += r.window?.messages ?? 0;
    c.window_lost += r.window?.lost ?? 0;
    for (const k of ['spliced', 'folded', 'on_path', 'cached']) c[k] += r.written?.[k] ?? 0;
    c.deferred += r.deferred ?? 0;
    if (r.last_summary === 'spliced' || r.last_summary === 'folded') c.last_spliced++;
    for (const [state, n] of Object.entries(r.prepared ?? {})) c.prepared[state] = (c.prepared[state] ?? 0) + n;
  }
  return c;
}

const lossCell = (w) => (w === null ? '?' : `${w.messages} (${w.lost})`);

function replayTable(rows) {
  const measured = rows.filter((r) => !r.replay.skipped);
  const table = [
    '| transcript | calls | fits applied | summaries | spliced (then folded) | summarizer on the request path | deferred | window: messages dropped (paths+URLs lost) | summarized (messages) | paths+URLs | kept | in tool calls | kept | modified/created | kept | trail tokens | summary tokens |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of measured) {
    const a = r.replay;
    table.push(
      `| ${name(r.file)} | ${a.model_calls} | ${a.applied} | ${a.summaries} | ${a.written.spliced + a.written.folded} (${a.written.folded}) | ${a.written.on_path + a.written.folded} | ${a.deferred} | ${lossCell(a.window)} | ${a.range} | ${a.all.n} | ${pct(a.all.share)} | ${a.calls.n} | ${pct(a.calls.share)} | ${a.changed.n} | ${pct(a.changed.share)} | ${a.trail_tokens} | ${a.summary_tokens} |`,
    );
  }
  const inGoals = measured.filter((r) => !r.stress);
  const { agg, goals } = aggregate(inGoals, (r) => r.replay);
  const counts = preparedCounts(rows);
  Object.assign(agg, {
    skipped: rows.filter((r) => r.replay.skipped).map((r) => `${name(r.file)} (${r.replay.skipped})`),
    not_exact: measured.filter((r) => !r.replay.exact).map((r) => name(r.file)),
    // The range expand gave back is as long as the summary's marker says it covers.
    covers_mismatch: measured.filter((r) => r.replay.covers !== r.replay.range).map((r) => name(r.file)),
    ...counts,
  });
  table.push(
    `| **median** (min${agg.weakest ? `: ${name(agg.weakest)}` : ''}) | | | | ${counts.spliced + counts.folded} (${counts.folded}) | ${counts.on_path + counts.folded} | ${counts.deferred} | ${counts.window_messages} (${counts.window_lost}) | | | ${pct(agg.all_median)} (${pct(agg.all_min)}) | | ${pct(agg.calls_pooled)} pooled (min ${pct(agg.calls_min)}) | | ${pct(agg.changed_pooled)} pooled | ${agg.trail_tokens_median} (max ${agg.trail_tokens_max}) | ${agg.summary_tokens_median} (max ${agg.summary_tokens_max}) |`,
  );
  return { table, agg, goals };
}

/** A service (its own lossy summarizer answering after `delayMs`, its own store) for `fn`; returns what fn returns and the summarizer calls. */
async function withService(delayMs, fn) {
  const llm = await startLossyLlm({ delayMs });
  const server = await startServer('compactor', {
    env: {
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: 'memory:',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'x',
      COMPACTOR_SUMMARIZER_MODEL: 'gpt-4o-mini',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
      COMPACTOR_SUMMARIZER_TIMEOUT_MS: '30000',
      COMPACTOR_ARTIFACT_SECRET: 'fidelity-benchmark-fixed-artifact-secret-0001',
    },
  });
  try {
    return { value: await fn(server.base), summarizer_calls: llm.calls() };
  } finally {
    await server.stop();
    await llm.stop();
  }
}

/** The replay of every native transcript (and the stress run) with preparing `prepare` (on or off). */
async function replayMode(native, prepare) {
  const runs = [...native];
  if (LONG > 0)
    runs.push({
      file: 'generated/long',
      format: 'openai-chat',
      stress: true,
      body: { messages: generateHistory({ seed: 7, pairs: LONG, scale: 0.455 }) },
    });
  const delay = prepare === 'on' ? SUMMARIZER_MS : 0;
  const { value: rows, summarizer_calls } = await withService(delay, async (base) => {
    const rows = [];
    for (const t of runs) {
      const t0 = performance.now();
      rows.push({ file: t.file, stress: t.stress === true, replay: await replay(base, t, prepare), ms: performance.now() - t0 });
    }
    return rows;
  });
  const { table, agg, goals } = replayTable(rows);
  const how = prepare === 'on' ? `prepare on, summarizer ${delay} ms, agent ${AGENT_MS} ms` : 'prepare off';
  console.log(
    `## replay through /v1/fit (window ${WINDOW}, target_fraction ${FRACTION}, policy ${POLICY}, ${how})\n\n${table.join('\n')}\n\n${JSON.stringify(agg)}\ngoals: ${JSON.stringify(goals)}\n`,
  );
  return { aggregate: agg, goals, rows, summarizer_calls, summarizer_ms: delay, agent_ms: prepare === 'on' ? AGENT_MS : 0 };
}

async function main() {
  const out = { commit: commit(), keep: KEEP, window: WINDOW, target_fraction: FRACTION, policy: POLICY };
  const started = performance.now();
  const native = corpusTranscripts(CORPUS).filter((x) => FILES.test(x.file));
  if (MODE === 'single' || MODE === 'both') {
    const { value, summarizer_calls } = await withService(0, async (base) => {
      const rows = [];
      for (const t of [...native, ...(await converted()).filter((x) => FILES.test(x.file))]) {
        rows.push({ file: t.file, trail: await single(base, t, undefined), guard: await single(base, t, 0) });
      }
      return rows;
    });
    const { table, agg, goals } = singleTable(value);
    console.log(`## single summary (keep ${KEEP} messages)\n\n${table.join('\n')}\n\ngoals: ${JSON.stringify(goals)}\n`);
    out.single = { aggregate: agg, goals, rows: value, summarizer_calls };
  }
  if (MODE === 'replay' || MODE === 'both') {
    out.replay = {};
    for (const prepare of PREPARE === 'both' ? ['off', 'on'] : [PREPARE]) out.replay[prepare] = await replayMode(native, prepare);
  }
  out.seconds = Math.round((performance.now() - started) / 1000);
  const path = process.env.FIDELITY_OUT ?? `${ROOT}bench/out/fidelity-${out.commit}.json`;
  mkdirSync(`${ROOT}bench/out`, { recursive: true });
  writeFileSync(path, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`wrote ${path} (${out.seconds} s)`);
}

await main();
