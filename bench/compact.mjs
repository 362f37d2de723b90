/**
 * Compaction benchmarks (issue 3). One run measures:
 *
 *  a. Tokens saved: POST /v1/compact on every corpus transcript (test/fixtures/corpus/{openai,
 *     anthropic}/*.json), with default options and with keep_tool_uses 1, 3 and 10 (`model` from
 *     meta.model when present); `tokens.before/after` from the responses, plus a total. Every
 *     default compaction is also expanded again and checked byte-exact against its input.
 *  b. POST /v1/compact over HTTP (child process, `node dist/server.js`, `store: "server"` on a
 *     fresh SQLite file per server) against the floor (a Fastify 5 route that parses the JSON body
 *     and returns it, same bytes), on the largest corpus transcript and on the generated
 *     2,000-message history. Each repetition starts a fresh Compactor and a fresh floor, and times:
 *       - fresh: the first request each new process serves (JIT, caches and store all cold);
 *       - cold: after 2 warm-up rounds on other histories, a history the server has never seen
 *         (every message misses the token-count cache, every artifact is new to the store);
 *       - warm: the same history with one message appended (the agent's next call): one miss;
 *       - compacted+1 (supplementary): the compacted history returned by the warm call with one
 *         more message appended (an agent that keeps the compacted history instead).
 *     Goal: <= 3x the floor. The cold ratio is the one compared to the goal; warm and fresh are
 *     reported against the same 3x.
 *  c. POST /v1/expand of the cold call's compacted result (restored from SQLite), against the
 *     floor given the same expand body. Goal: <= 3x the floor. Supplementary: against the floor
 *     echoing the restored history (expand's response is that large, the floor's echo is not).
 *  d. Throughput: autocannon, 32 connections for 20 s, POST /v1/compact with the same body every
 *     time (a mid-size transcript), then the floor with the same body: requests/s, p50/p99
 *     latency, errors/non-2xx (must be 0).
 *  e. Peak RSS (VmHWM) of the Compactor servers of b and d.
 *
 * Usage: npm run build && node --expose-gc bench/compact.mjs
 * Env: BENCH_REPS (fresh servers per input in b, default 7), BENCH_DURATION (autocannon seconds,
 * default 20), BENCH_CONNECTIONS (default 32), BENCH_PARTS (default "abd"; c runs with b),
 * BENCH_OUT (JSON path, default bench/out/compact-<timestamp>.json), BENCH_LOG_LEVEL (Compactor
 * LOG_LEVEL, default info), BENCH_COMMIT (commit of an exported tree that has no .git).
 * Combine runs: node bench/summarize.mjs bench/out/compact-*.json
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { generateHistory, nextAssistantMessage, salted } from './lib/generate.mjs';
import { distHash, loadavg, runMeta } from './lib/meta.mjs';
import { metric, peakRssMiB, rssMiB, startServer, timedPost } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MID_FILE = process.env.BENCH_MID ?? 'openai/mini-swe-agent-gemini-3-pro__django__django-11138.json';
const REPS = Number(process.env.BENCH_REPS ?? 7);
const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PARTS = process.env.BENCH_PARTS ?? 'abd';
const GENERATED_MODEL = 'gpt-4o';
const KEEP_SETTINGS = [1, 3, 10];

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const gc = () => globalThis.gc();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);

/** A fresh SQLite file per Compactor server, all under one scratch folder removed at the end. */
const STORE_DIR = mkdtempSync(`${os.tmpdir()}/compactor-bench-`);
let storeSeq = 0;
const freshStore = () => ({ COMPACTOR_STORE_URL: `sqlite:${STORE_DIR}/store-${storeSeq++}.db` });
const startCompactor = () => startServer('compactor', { env: freshStore() });

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

const CORPUS = ['openai', 'anthropic'].flatMap((dir) =>
  readdirSync(`${CORPUS_DIR}/${dir}`)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const path = `${CORPUS_DIR}/${dir}/${f}`;
      const file = JSON.parse(readFileSync(path, 'utf8'));
      return {
        rel: `${dir}/${f}`,
        bytes: statSync(path).size,
        messages: file.messages,
        tools: file.tools,
        system: file.system,
        model: typeof file.meta?.model === 'string' ? file.meta.model : undefined,
      };
    }),
);
const LARGEST = CORPUS.filter((c) => c.rel.startsWith('openai/')).reduce((a, b) => (b.bytes > a.bytes ? b : a));
const MID = CORPUS.find((c) => c.rel === MID_FILE);
if (!MID) throw new Error(`BENCH_MID ${MID_FILE} is not in the corpus`);

/** A /v1/compact (or floor) body: the history, the transcript's model and tools, and options. */
function compactBody(input, messages, options = {}) {
  return Buffer.from(
    JSON.stringify({
      messages,
      ...(input.model ? { model: input.model } : {}),
      ...(input.tools ? { tools: input.tools } : {}),
      ...(input.system !== undefined ? { system: input.system } : {}),
      ...options,
    }),
  );
}

async function postJson(url, body) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

// ---------------------------------------------------------------------------------------------
// a. Tokens saved on every corpus transcript
// ---------------------------------------------------------------------------------------------

async function savingsBench() {
  const server = await startCompactor();
  const rows = [];
  try {
    for (const input of CORPUS) {
      const row = { file: input.rel, messages: input.messages.length, model: input.model ?? null, settings: {} };
      const settings = [['default', {}], ...KEEP_SETTINGS.map((k) => [`keep_${k}`, { keep_tool_uses: k }])];
      for (const [name, options] of settings) {
        const out = await postJson(`${server.base}/v1/compact`, compactBody(input, input.messages, options));
        row.settings[name] = {
          before: out.tokens.before,
          after: out.tokens.after,
          saved: out.tokens.saved,
          applied: out.applied,
          reason: out.reason ?? null,
          artifacts: out.artifacts.length,
        };
        if (name === 'default') {
          row.tokenizer = out.tokens.tokenizer;
          row.counting = out.tokens.counting;
          const back = await postJson(`${server.base}/v1/expand`, Buffer.from(JSON.stringify({ messages: out.messages })));
          row.round_trip = JSON.stringify(back.messages) === JSON.stringify(input.messages) && back.missing.length === 0;
          if (!row.round_trip) throw new Error(`${input.rel}: expand(compact(x)) != x`);
        }
      }
      const counts = await postJson(`${server.base}/v1/tokens`, compactBody(input, input.messages));
      row.last_message_tokens = counts.messages.at(-1);
      rows.push(row);
      const d = row.settings.default;
      log(`saved ${input.rel}: ${d.before} -> ${d.after} (${pct(d.saved, d.before)})`);
    }
  } finally {
    await server.stop();
  }
  const total = {};
  for (const name of Object.keys(rows[0].settings)) {
    const before = rows.reduce((s, r) => s + r.settings[name].before, 0);
    const after = rows.reduce((s, r) => s + r.settings[name].after, 0);
    total[name] = { before, after, saved: before - after };
  }
  return { rows, total };
}

const pct = (saved, before) => `${((100 * saved) / before).toFixed(1)}%`;

// ---------------------------------------------------------------------------------------------
// b + c. HTTP: /v1/compact and /v1/expand against the floor
// ---------------------------------------------------------------------------------------------

const HTTP_INPUTS = [
  { name: 'corpus', label: `largest corpus transcript (${LARGEST.rel})`, ...LARGEST },
  {
    name: 'generated',
    label: 'generated 2,000 messages (seed 42)',
    messages: generateHistory({ seed: 42 }),
    model: GENERATED_MODEL,
  },
];

async function post(url, body) {
  gc();
  await sleep(30);
  return timedPost(url, body);
}

/** Times the same body on both servers, alternating which goes first. */
async function both(ours, floor, oursPath, body, oursFirst) {
  const r = {};
  for (const side of oursFirst ? ['ours', 'floor'] : ['floor', 'ours']) {
    r[side] = await post(side === 'ours' ? `${ours.base}${oursPath}` : floor.url, body);
  }
  return r;
}

const parse = (buf) => JSON.parse(Buffer.from(buf).toString('utf8'));

async function httpBench() {
  const results = {};
  const nonce = Date.now().toString(36);
  for (const input of HTTP_INPUTS) {
    const r = {
      fresh: { ours: [], floor: [] },
      cold: { ours: [], floor: [] },
      warm: { ours: [], floor: [] },
      expand: { ours: [], floor: [] },
      compacted_plus1: { ours: [], floor: [] },
      misses: { cold: [], warm: [], compacted_plus1: [] },
      peak_rss_mib: [],
      rss_at_start_mib: [],
    };
    for (let rep = 0; rep < REPS; rep++) {
      const ours = await startCompactor();
      const floor = await startServer('floor');
      r.rss_at_start_mib.push(rssMiB(ours.pid));
      const oursFirst = rep % 2 === 0;
      const tag = `${input.name}-${rep}-${nonce}`;
      try {
        // The first request of each new process.
        const first = both(ours, floor, '/v1/compact', compactBody(input, salted(input.messages, `first-${tag}`)), oursFirst);
        const f = await first;
        r.fresh.ours.push(f.ours.ms);
        r.fresh.floor.push(f.floor.ms);
        // Warm-up (JIT, sockets): cold and warm calls on histories that are never measured.
        for (let w = 0; w < 2; w++) {
          const h = salted(input.messages, `warmup-${w}-${tag}`);
          const next = salted([nextAssistantMessage(1000 + w)], `warmup-${w}-${tag}`);
          for (const messages of [h, [...h, ...next]]) await both(ours, floor, '/v1/compact', compactBody(input, messages), true);
        }

        const history = salted(input.messages, tag);
        const grown = [...history, ...salted([nextAssistantMessage(rep)], tag)];
        const m0 = await metric(ours.base, 'compactor_token_cache_misses');
        const cold = await both(ours, floor, '/v1/compact', compactBody(input, history), oursFirst);
        const m1 = await metric(ours.base, 'compactor_token_cache_misses');
        const warm = await both(ours, floor, '/v1/compact', compactBody(input, grown), oursFirst);
        const m2 = await metric(ours.base, 'compactor_token_cache_misses');
        r.cold.ours.push(cold.ours.ms);
        r.cold.floor.push(cold.floor.ms);
        r.warm.ours.push(warm.ours.ms);
        r.warm.floor.push(warm.floor.ms);
        r.misses.cold.push(m1 - m0);
        r.misses.warm.push(m2 - m1);

        const coldOut = parse(cold.ours.buf);
        const warmOut = parse(warm.ours.buf);
        if (!coldOut.applied || !warmOut.applied) throw new Error(`${input.name}: compaction not applied (${coldOut.reason})`);

        // c. Expand the cold call's compacted history.
        const expandBody = Buffer.from(JSON.stringify({ messages: coldOut.messages }));
        const expand = await both(ours, floor, '/v1/expand', expandBody, oursFirst);
        r.expand.ours.push(expand.ours.ms);
        r.expand.floor.push(expand.floor.ms);
        const back = parse(expand.ours.buf);
        if (JSON.stringify(back.messages) !== JSON.stringify(history) || back.missing.length > 0) {
          throw new Error(`${input.name}: expand did not restore the history byte-exact`);
        }

        // Supplementary: the agent keeps the compacted history and appends its next message.
        const kept = [...warmOut.messages, ...salted([nextAssistantMessage(500 + rep)], `kept-${tag}`)];
        const k = await both(ours, floor, '/v1/compact', compactBody(input, kept), oursFirst);
        r.misses.compacted_plus1.push((await metric(ours.base, 'compactor_token_cache_misses')) - m2);
        r.compacted_plus1.ours.push(k.ours.ms);
        r.compacted_plus1.floor.push(k.floor.ms);

        r.summary = {
          messages: history.length,
          request_bytes: compactBody(input, history).length,
          tokens_before: coldOut.tokens.before,
          tokens_after: coldOut.tokens.after,
          tokenizer: coldOut.tokens.tokenizer,
          artifacts: coldOut.artifacts.length,
          response_bytes_cold: cold.ours.bytes,
          expand_request_bytes: expandBody.length,
          expand_response_bytes: expand.ours.bytes,
          expand_restored: back.restored,
          compacted_plus1_request_bytes: compactBody(input, kept).length,
          compacted_plus1_reason: parse(k.ours.buf).reason ?? null,
        };
      } finally {
        r.peak_rss_mib.push(peakRssMiB(ours.pid));
        await ours.stop();
        await floor.stop();
      }
      log(
        `http ${input.name} rep ${rep + 1}/${REPS}: fresh ${fmt(r.fresh.ours.at(-1))}/${fmt(r.fresh.floor.at(-1))}, cold ${fmt(r.cold.ours.at(-1))}/${fmt(r.cold.floor.at(-1))}, warm ${fmt(r.warm.ours.at(-1))}/${fmt(r.warm.floor.at(-1))}, expand ${fmt(r.expand.ours.at(-1))}/${fmt(r.expand.floor.at(-1))}, compacted+1 ${fmt(r.compacted_plus1.ours.at(-1))}/${fmt(r.compacted_plus1.floor.at(-1))} ms (ours/floor); misses cold ${r.misses.cold.at(-1)} warm ${r.misses.warm.at(-1)}`,
      );
    }
    results[input.name] = r;
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// d + e. Throughput under concurrent connections
// ---------------------------------------------------------------------------------------------

function cannon(url, body, duration) {
  return autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: CONNECTIONS,
    duration,
  });
}

const cannonFigures = (res) => ({
  rps: res.latency.totalCount / res.duration,
  rps_average_per_second: res.requests.average,
  requests: res.latency.totalCount,
  latency_p50_ms: res.latency.p50,
  latency_p90_ms: res.latency.p90,
  latency_p97_5_ms: res.latency.p97_5,
  latency_p99_ms: res.latency.p99,
  latency_mean_ms: res.latency.average,
  latency_max_ms: res.latency.max,
  errors: res.errors,
  timeouts: res.timeouts,
  non2xx: res.non2xx,
  duration_s: res.duration,
});

async function loadBench() {
  const body = compactBody(MID, MID.messages);
  const ours = await startCompactor();
  const floor = await startServer('floor');
  const r = { input: MID.rel, request_bytes: body.length, rss_at_start_mib: rssMiB(ours.pid) };
  try {
    const check = await postJson(`${ours.base}/v1/compact`, body);
    if (!check.applied) throw new Error(`${MID.rel}: compaction not applied (${check.reason})`);
    r.tokens_before = check.tokens.before;
    r.tokens_after = check.tokens.after;
    r.artifacts = check.artifacts.length;
    // Warm-up: 3 s of the same load on each, untimed.
    await cannon(`${ours.base}/v1/compact`, body, 3);
    await cannon(floor.url, body, 3);
    gc();
    r.ours = cannonFigures(await cannon(`${ours.base}/v1/compact`, body, DURATION));
    r.ours_peak_rss_mib = peakRssMiB(ours.pid);
    log(
      `load ours: ${fmt(r.ours.rps)} req/s, p50 ${r.ours.latency_p50_ms} p99 ${r.ours.latency_p99_ms} ms, errors ${r.ours.errors} non2xx ${r.ours.non2xx}`,
    );
    gc();
    r.floor = cannonFigures(await cannon(floor.url, body, DURATION));
    r.floor_peak_rss_mib = peakRssMiB(floor.pid);
    log(`load floor: ${fmt(r.floor.rps)} req/s, p50 ${r.floor.latency_p50_ms} p99 ${r.floor.latency_p99_ms} ms`);
  } finally {
    await ours.stop();
    await floor.stop();
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Run, summarize, print
// ---------------------------------------------------------------------------------------------

const meta = {
  ...runMeta(),
  reps: REPS,
  fresh_reps: REPS,
  duration_s: DURATION,
  connections: CONNECTIONS,
  log_level: process.env.BENCH_LOG_LEVEL ?? 'info',
};
log(`node ${meta.node}, ${meta.nproc} cpus, reps ${REPS}, parts ${PARTS}`);

let savings;
let http;
let load;
try {
  if (PARTS.includes('a')) savings = await savingsBench();
  if (PARTS.includes('b')) http = await httpBench();
  if (PARTS.includes('d')) load = await loadBench();
} finally {
  rmSync(STORE_DIR, { recursive: true, force: true });
}

const figures = [];
const fig = (key, samples, unit, goal) =>
  figures.push({
    key,
    value: Array.isArray(samples) ? median(samples) : samples,
    ...(Array.isArray(samples) ? { min: Math.min(...samples) } : {}),
    unit,
    ...(goal ? { goal } : {}),
  });
const AT_MOST_3X = { op: '<=', value: 3 };

if (savings) {
  for (const [name, t] of Object.entries(savings.total)) {
    fig(`saved.total.${name}.before`, t.before, 'tokens');
    fig(`saved.total.${name}.after`, t.after, 'tokens');
    fig(`saved.total.${name}.pct`, (100 * t.saved) / t.before, '%');
  }
  const big = savings.rows.find((r) => r.file === LARGEST.rel);
  const d = big.settings.default;
  fig('saved.largest.default.pct', (100 * d.saved) / d.before, '%');
  fig('saved.largest.last_message_tokens', big.last_message_tokens, 'tokens');
  fig('saved.largest.default.pct_without_last_message', (100 * d.saved) / (d.before - big.last_message_tokens), '%');
}
if (http) {
  for (const input of HTTP_INPUTS) {
    const n = input.name;
    const h = http[n];
    for (const call of ['cold', 'warm', 'fresh', 'expand', 'compacted_plus1']) {
      const path = call === 'expand' ? 'expand' : `compact.${call}`;
      fig(`http.${n}.${path}.ours_ms`, h[call].ours, 'ms');
      fig(`http.${n}.${path}.floor_ms`, h[call].floor, 'ms');
      fig(
        `http.${n}.${path}.ratio`,
        median(h[call].ours) / median(h[call].floor),
        'x floor',
        call === 'compacted_plus1' ? undefined : AT_MOST_3X,
      );
    }
    // Supplementary: expand's response is the restored history, so also set it against the floor
    // echoing that history (the cold call's floor body: the same messages, same bytes plus `model`).
    fig(`http.${n}.expand.ratio_vs_floor_echoing_restored`, median(h.expand.ours) / median(h.cold.floor), 'x floor');
    fig(`rss.http_${n}.compactor_at_start_mib`, h.rss_at_start_mib, 'MiB');
    fig(`rss.http_${n}.compactor_peak_mib`, Math.max(...h.peak_rss_mib), 'MiB');
  }
}
if (load) {
  for (const side of ['ours', 'floor']) {
    fig(`load.${side}.rps`, load[side].rps, 'req/s');
    fig(`load.${side}.p50_ms`, load[side].latency_p50_ms, 'ms');
    fig(`load.${side}.p99_ms`, load[side].latency_p99_ms, 'ms');
    fig(`load.${side}.errors_and_non2xx`, load[side].errors + load[side].non2xx + load[side].timeouts, 'count', {
      op: '<=',
      value: 0,
    });
  }
  fig('load.rps_ratio_floor_over_ours', load.floor.rps / load.ours.rps, 'x');
  fig('rss.load.compactor_peak_mib', load.ours_peak_rss_mib, 'MiB');
  fig('rss.load.floor_peak_mib', load.floor_peak_rss_mib, 'MiB');
}

meta.loadavg_end = loadavg();
meta.seconds = Math.round((performance.now() - T0) / 1000);
meta.dist_hash_end = distHash();
if (meta.dist_hash_end !== meta.dist_hash)
  log('WARNING: dist/ changed during the run (someone rebuilt it): figures mix two builds');

const met = (f) => (f.goal ? (f.goal.op === '<=' ? f.value <= f.goal.value : f.value >= f.goal.value) : undefined);

console.log(
  `\n# Compaction benchmarks: ${meta.date}, node ${meta.node}, ${meta.nproc} cpus (${meta.cpu}), commit ${meta.commit}`,
);
console.log(
  `dist ${meta.dist_hash}${meta.dist_hash_end !== meta.dist_hash ? ` -> ${meta.dist_hash_end} (CHANGED during the run)` : ''}, src dirty: ${meta.src_dirty}; load average at start ${meta.loadavg_start.join(' ')}, at end ${meta.loadavg_end.join(' ')}; ${meta.seconds} s`,
);
if (savings) {
  console.log('\na. tokens saved by POST /v1/compact (tokens.before -> tokens.after, saved %):');
  const cell = (s) => `${s.after} (${pct(s.saved, s.before)})`;
  console.log(
    `  ${'transcript'.padEnd(84)} ${'msgs'.padStart(5)} ${'before'.padStart(8)}  default                keep 1                 keep 3                 keep 10`,
  );
  for (const row of savings.rows) {
    const s = row.settings;
    console.log(
      `  ${row.file.padEnd(84)} ${String(row.messages).padStart(5)} ${String(s.default.before).padStart(8)}  ${cell(s.default).padEnd(22)} ${cell(s.keep_1).padEnd(22)} ${cell(s.keep_3).padEnd(22)} ${cell(s.keep_10)}`,
    );
  }
  const t = savings.total;
  console.log(
    `  ${'TOTAL'.padEnd(84)} ${''.padStart(5)} ${String(t.default.before).padStart(8)}  ${cell(t.default).padEnd(22)} ${cell(t.keep_1).padEnd(22)} ${cell(t.keep_3).padEnd(22)} ${cell(t.keep_10)}`,
  );
}
if (http) {
  console.log('\nb/c. inputs:');
  for (const input of HTTP_INPUTS)
    console.log(`  ${input.name.padEnd(10)} ${input.label}: ${JSON.stringify(http[input.name].summary)}`);
}
if (load)
  console.log(
    `\nd. load input: ${load.input}, ${load.request_bytes} bytes, tokens ${load.tokens_before} -> ${load.tokens_after}`,
  );
console.log(`\nmedians of ${REPS} repetitions, minimum in brackets:`);
for (const f of figures) {
  const m = met(f);
  const goal = f.goal ? `goal ${f.goal.op} ${f.goal.value}  ${m ? 'MET' : 'MISSED'}` : '';
  const low = f.min !== undefined ? `(${fmt(f.min, 1)})` : '';
  const digits = f.unit === 'tokens' || f.unit === 'count' ? 0 : f.unit === 'ms' ? 1 : 2;
  console.log(`  ${f.key.padEnd(52)} ${fmt(f.value, digits).padStart(10)} ${low.padStart(9)} ${f.unit.padEnd(10)} ${goal}`);
}

const out = {
  meta,
  figures: figures.map((f) => ({ ...f, met: met(f) })),
  raw: { savings, http, load },
};
const file = process.env.BENCH_OUT ?? `${ROOT}bench/out/compact-${meta.date.replace(/[:.]/g, '-')}.json`;
mkdirSync(new URL('./out/', import.meta.url), { recursive: true });
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
log(`wrote ${file}`);
