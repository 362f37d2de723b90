/**
 * Sliding-window benchmarks (issue 2). One run measures, with medians over BENCH_REPS repetitions:
 *
 *  1. HTTP: POST /v1/window on the Compactor (child process, `node dist/server.js`) against the
 *     floor (child process, a Fastify 5 route that only parses the JSON body and returns it), on
 *     the largest real transcript and on a generated 2,000-message, ~1M-token history:
 *       - cold: a history the server has never seen (every message misses the count cache), on a
 *         server already warmed up on other histories; goal <= 3x the floor;
 *       - warm: the same history plus one appended message (one miss); goal <= 1.5x the floor;
 *       - fresh process: the first request a newly started process serves (supplementary).
 *  2. In process: Compactor.run(windowStrategy, ...) against @langchain/core trimMessages with a
 *     per-message cached o200k counter, keeping the newest N tokens; goal: ours >= 3x faster.
 *  3. In process: Compactor.tokens() (cold cache) against gpt-tokenizer countTokens on the same
 *     text; goal: ours >= 0.8x the direct throughput.
 *  4. Peak RSS (VmHWM) of the Compactor server process.
 *
 * Usage: npm run bench   (= npm run build && node --expose-gc bench/window.mjs)
 * Env: BENCH_REPS (default 7), BENCH_FRESH_REPS (default 5), BENCH_OUT (JSON output path,
 * default bench/out/window-<timestamp>.json), BENCH_LOG_LEVEL (Compactor LOG_LEVEL, default info).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { trimMessages } from '@langchain/core/messages';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Compactor, TokenCounter, windowStrategy } from '../dist/index.js';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { generateHistory, nextAssistantMessage, salted } from './lib/generate.mjs';
import { AS_TEXT, cachedCounter, toLangChain } from './lib/langchain.mjs';
import { distHash, loadavg, runMeta } from './lib/meta.mjs';
import { metric, peakRssMiB, rssMiB, startServer, timedPost } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const REPS = Number(process.env.BENCH_REPS ?? 7);
const FRESH_REPS = Number(process.env.BENCH_FRESH_REPS ?? 5);
const CORPUS_FILE = `${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__psf__requests-1142.json`;
const MODEL = 'gpt-4o';

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc (npm run bench does)');
  process.exit(2);
}
const gc = () => globalThis.gc();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);
const T0 = performance.now();

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

const corpusMessages = JSON.parse(readFileSync(CORPUS_FILE, 'utf8')).messages;
const generatedMessages = generateHistory({ seed: 42 });

/** The text the Compactor counts for an OpenAI Chat message (mirrors its openai-chat adapter). */
function countableText(m) {
  const parts = [m.name, m.refusal, m.reasoning_content, m.reasoning, m.content];
  for (const c of m.tool_calls ?? []) parts.push(c.function?.name, c.function?.arguments);
  return parts.filter((p) => typeof p === 'string' && p.length > 0).join('\n');
}

const INPUTS = [
  {
    name: 'corpus',
    label: 'largest corpus transcript (psf__requests-1142)',
    messages: corpusMessages,
    // The history has 144 messages: keep the newest 50 so the window really drops some.
    httpKeep: { messages: 50 },
    // Its last message alone is a 445k-token tool result: a budget below that keeps only the
    // head, the first user message and that message, and trimMessages would return nothing.
    windowTokens: 460_000,
  },
  {
    name: 'generated',
    label: 'generated 2,000 messages (seed 42)',
    messages: generatedMessages,
    httpKeep: { messages: 200 },
    windowTokens: 100_000,
  },
];

for (const input of INPUTS) {
  input.bytes = Buffer.byteLength(JSON.stringify(input.messages));
  const t = new Compactor(new TokenCounter(0)).tokens({ messages: input.messages, model: MODEL });
  input.tokens = t.total;
  input.texts = input.messages.map(countableText);
  input.text = input.texts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// 1. HTTP: /v1/window against the floor
// ---------------------------------------------------------------------------------------------

const bodyOf = (input, messages) => Buffer.from(JSON.stringify({ messages, model: MODEL, keep: input.httpKeep }));

async function post(server, body) {
  gc();
  await sleep(30);
  return timedPost(server.url, body);
}

/** Checks (outside the timed region) that the Compactor answered what it should. */
function checkWindow(input, buf, sentMessages) {
  const out = JSON.parse(Buffer.from(buf).toString('utf8'));
  if (!Array.isArray(out.messages) || out.messages.length > sentMessages) throw new Error(`${input.name}: bad /v1/window answer`);
  if (!out.applied || out.dropped.messages === 0) throw new Error(`${input.name}: the window dropped nothing (${out.reason})`);
  return out;
}

async function httpBench() {
  const ours = await startServer('compactor');
  const floor = await startServer('floor');
  log(`servers up: compactor pid ${ours.pid} (${fmt(ours.startMs, 0)} ms), floor pid ${floor.pid} (${fmt(floor.startMs, 0)} ms)`);
  const results = { rssAtStart: { compactor: rssMiB(ours.pid), floor: rssMiB(floor.pid) } };
  const nonce = Date.now().toString(36);
  try {
    // Warm-up (JIT, sockets): the same pattern on histories that are never measured.
    for (const input of INPUTS) {
      for (let w = 0; w < 3; w++) {
        const h = salted(input.messages, `warmup-${w}-${nonce}`);
        const next = salted([nextAssistantMessage(1000 + w)], `${input.name}-warmup-${w}-${nonce}`);
        for (const body of [bodyOf(input, h), bodyOf(input, [...h, ...next])]) {
          await post(floor, body);
          await post(ours, body);
        }
      }
    }
    log('warm-up done');
    for (const input of INPUTS) {
      const r = { cold: { ours: [], floor: [] }, warm: { ours: [], floor: [] }, bytes: {}, misses: { cold: [], warm: [] } };
      for (let rep = 0; rep < REPS; rep++) {
        const history = salted(input.messages, `${input.name}-${rep}-${nonce}`);
        const grown = [...history, ...salted([nextAssistantMessage(rep)], `${input.name}-${rep}-${nonce}`)];
        const coldBody = bodyOf(input, history);
        const warmBody = bodyOf(input, grown);
        const m0 = await metric(ours.base, 'compactor_token_cache_misses');
        // Alternate which server goes first.
        if (rep % 2 === 0) r.cold.floor.push((await post(floor, coldBody)).ms);
        const cold = await post(ours, coldBody);
        r.cold.ours.push(cold.ms);
        if (rep % 2 === 1) r.cold.floor.push((await post(floor, coldBody)).ms);
        const m1 = await metric(ours.base, 'compactor_token_cache_misses');
        if (rep % 2 === 0) r.warm.floor.push((await post(floor, warmBody)).ms);
        const warm = await post(ours, warmBody);
        r.warm.ours.push(warm.ms);
        if (rep % 2 === 1) r.warm.floor.push((await post(floor, warmBody)).ms);
        const m2 = await metric(ours.base, 'compactor_token_cache_misses');
        r.misses.cold.push(m1 - m0);
        r.misses.warm.push(m2 - m1);
        const out = checkWindow(input, warm.buf, grown.length);
        r.kept = out.messages.length;
        r.bytes = { request: coldBody.length, response_cold: cold.bytes, response_warm: warm.bytes };
      }
      results[input.name] = r;
      log(
        `http ${input.name}: cold ours ${fmt(median(r.cold.ours))} floor ${fmt(median(r.cold.floor))}; warm ours ${fmt(median(r.warm.ours))} floor ${fmt(median(r.warm.floor))} ms; misses cold ${r.misses.cold[0]} warm ${r.misses.warm[0]}`,
      );
    }
  } finally {
    results.peakRss = { compactor: peakRssMiB(ours.pid), floor: peakRssMiB(floor.pid) };
    await ours.stop();
    await floor.stop();
  }
  return results;
}

/** The first request a freshly started process serves (JIT cold, caches empty). */
async function freshBench() {
  const results = {};
  for (const input of INPUTS) {
    const r = { ours: [], floor: [], oursPeakRss: [], oursStartMs: [] };
    for (let rep = 0; rep < FRESH_REPS; rep++) {
      const body = bodyOf(input, salted(input.messages, `fresh-${rep}`));
      for (const kind of rep % 2 === 0 ? ['floor', 'compactor'] : ['compactor', 'floor']) {
        const server = await startServer(kind);
        try {
          const res = await post(server, body);
          if (kind === 'compactor') {
            r.ours.push(res.ms);
            r.oursPeakRss.push(peakRssMiB(server.pid));
            r.oursStartMs.push(server.startMs);
          } else r.floor.push(res.ms);
        } finally {
          await server.stop();
        }
      }
    }
    results[input.name] = r;
    log(`fresh ${input.name}: ours ${fmt(median(r.ours))} floor ${fmt(median(r.floor))} ms`);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 2. In process: window against trimMessages
// ---------------------------------------------------------------------------------------------

async function windowBench() {
  const results = {};
  for (const input of INPUTS) {
    const N = input.windowTokens;
    const bodyText = JSON.stringify({ messages: input.messages, model: MODEL });
    const options = { keep: { tokens: N }, keep_first_user: true };
    const lcMessages = toLangChain(input.messages); // outside every timed region
    const lcOptions = (cache) => ({
      maxTokens: N,
      strategy: 'last',
      includeSystem: true,
      startOn: ['human', 'ai'],
      tokenCounter: cachedCounter(cache),
    });

    const oursOnce = async (compactor) => {
      gc();
      const t0 = performance.now();
      const request = JSON.parse(bodyText);
      const t1 = performance.now();
      const out = await compactor.run(windowStrategy, request, options);
      const t2 = performance.now();
      return { total: t2 - t0, run: t2 - t1, out };
    };
    const lcOnce = async (cache) => {
      gc();
      const t0 = performance.now();
      const out = await trimMessages(lcMessages, lcOptions(cache));
      return { total: performance.now() - t0, out };
    };

    // Warm-up (JIT, tokenizer merge cache) for both, untimed.
    const warmCompactor = new Compactor(new TokenCounter(200_000));
    const warmCache = new Map();
    for (let w = 0; w < 2; w++) {
      await oursOnce(w === 0 ? warmCompactor : new Compactor(new TokenCounter(200_000)));
      await lcOnce(w === 0 ? warmCache : new Map());
    }

    const r = { N, ours_cold: [], ours_cold_run: [], lc_cold: [], ours_warm: [], ours_warm_run: [], lc_warm: [] };
    let last;
    for (let rep = 0; rep < REPS; rep++) {
      const order = rep % 2 === 0 ? ['ours', 'lc'] : ['lc', 'ours'];
      for (const side of order) {
        if (side === 'ours') {
          const cold = await oursOnce(new Compactor(new TokenCounter(200_000)));
          r.ours_cold.push(cold.total);
          r.ours_cold_run.push(cold.run);
          const warm = await oursOnce(warmCompactor);
          r.ours_warm.push(warm.total);
          r.ours_warm_run.push(warm.run);
          last = { ...last, ours: cold.out };
        } else {
          const cold = await lcOnce(new Map());
          r.lc_cold.push(cold.total);
          r.lc_warm.push((await lcOnce(warmCache)).total);
          last = { ...last, lc: cold.out };
        }
      }
    }
    const count = cachedCounter(new Map());
    r.kept = {
      ours_messages: last.ours.messages.length,
      ours_tokens: last.ours.tokens.after,
      lc_messages: last.lc.length,
      lc_tokens: count(last.lc),
    };
    results[input.name] = r;
    log(
      `window ${input.name}: cold ours ${fmt(median(r.ours_cold))} lc ${fmt(median(r.lc_cold))}; warm ours ${fmt(median(r.ours_warm))} lc ${fmt(median(r.lc_warm))} ms`,
    );
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 3. In process: token counting throughput
// ---------------------------------------------------------------------------------------------

function tokensBench() {
  const results = {};
  for (const input of INPUTS) {
    const request = { messages: input.messages, model: MODEL };
    const framing = 3 * input.messages.length + 3;
    const ours = () => {
      const compactor = new Compactor(new TokenCounter(200_000));
      gc();
      const t0 = performance.now();
      const out = compactor.tokens(request);
      return { ms: performance.now() - t0, tokens: out.total - framing };
    };
    const direct = () => {
      gc();
      const t0 = performance.now();
      const tokens = countTokens(input.text, AS_TEXT);
      return { ms: performance.now() - t0, tokens };
    };
    const perMessage = () => {
      gc();
      const t0 = performance.now();
      let tokens = 0;
      for (const t of input.texts) if (t.length > 0) tokens += countTokens(t, AS_TEXT);
      return { ms: performance.now() - t0, tokens };
    };
    for (let w = 0; w < 2; w++) {
      ours();
      direct();
      perMessage();
    }
    const r = { ours: [], direct: [], direct_per_message: [] };
    for (let rep = 0; rep < REPS; rep++) {
      const fns = { ours, direct, direct_per_message: perMessage };
      const order = rep % 2 === 0 ? ['ours', 'direct', 'direct_per_message'] : ['direct_per_message', 'direct', 'ours'];
      for (const k of order) {
        const res = fns[k]();
        r[k].push(res.ms);
        r[`${k}_tokens`] = res.tokens;
      }
    }
    results[input.name] = r;
    log(`tokens ${input.name}: ours ${fmt(median(r.ours))} direct ${fmt(median(r.direct))} ms`);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Run, summarize, print
// ---------------------------------------------------------------------------------------------

const meta = {
  ...runMeta(),
  reps: REPS,
  fresh_reps: FRESH_REPS,
  log_level: process.env.BENCH_LOG_LEVEL ?? 'info',
};
log(`node ${meta.node}, ${meta.nproc} cpus, reps ${REPS}`);
for (const i of INPUTS) log(`input ${i.name}: ${i.messages.length} messages, ${i.bytes} bytes, ${i.tokens} tokens`);

const http = await httpBench();
const fresh = await freshBench();
const windowR = await windowBench();
const tokensR = tokensBench();

/** Flat figures: every median and ratio, with its goal where there is one. */
const figures = [];
/** `samples`: the repetitions (the figure is their median, their minimum is kept too) or one value. */
const fig = (key, samples, unit, goal) =>
  figures.push({
    key,
    value: Array.isArray(samples) ? median(samples) : samples,
    ...(Array.isArray(samples) ? { min: Math.min(...samples) } : {}),
    unit,
    ...(goal ? { goal } : {}),
  });
for (const input of INPUTS) {
  const n = input.name;
  const h = http[n];
  fig(`http.${n}.cold.ours_ms`, h.cold.ours, 'ms');
  fig(`http.${n}.cold.floor_ms`, h.cold.floor, 'ms');
  fig(`http.${n}.cold.ratio`, median(h.cold.ours) / median(h.cold.floor), 'x floor', { op: '<=', value: 3 });
  fig(`http.${n}.warm.ours_ms`, h.warm.ours, 'ms');
  fig(`http.${n}.warm.floor_ms`, h.warm.floor, 'ms');
  fig(`http.${n}.warm.ratio`, median(h.warm.ours) / median(h.warm.floor), 'x floor', { op: '<=', value: 1.5 });
  const f = fresh[n];
  fig(`http.${n}.fresh.ours_ms`, f.ours, 'ms');
  fig(`http.${n}.fresh.floor_ms`, f.floor, 'ms');
  fig(`http.${n}.fresh.ratio`, median(f.ours) / median(f.floor), 'x floor', { op: '<=', value: 3 });
  fig(`http.${n}.fresh.ours_peak_rss_mib`, f.oursPeakRss, 'MiB');
  const w = windowR[n];
  fig(`window.${n}.ours_cold_ms`, w.ours_cold, 'ms');
  fig(`window.${n}.ours_cold_run_only_ms`, w.ours_cold_run, 'ms');
  fig(`window.${n}.lc_cold_ms`, w.lc_cold, 'ms');
  fig(`window.${n}.cold.speedup`, median(w.lc_cold) / median(w.ours_cold), 'x (lc/ours)', { op: '>=', value: 3 });
  fig(`window.${n}.ours_warm_ms`, w.ours_warm, 'ms');
  fig(`window.${n}.ours_warm_run_only_ms`, w.ours_warm_run, 'ms');
  fig(`window.${n}.lc_warm_ms`, w.lc_warm, 'ms');
  fig(`window.${n}.warm.speedup`, median(w.lc_warm) / median(w.ours_warm), 'x (lc/ours)', { op: '>=', value: 3 });
  const t = tokensR[n];
  const oursTps = t.ours_tokens / (median(t.ours) / 1000);
  const directTps = t.direct_tokens / (median(t.direct) / 1000);
  const perMessageTps = t.direct_per_message_tokens / (median(t.direct_per_message) / 1000);
  fig(`tokens.${n}.ours_ms`, t.ours, 'ms');
  fig(`tokens.${n}.direct_ms`, t.direct, 'ms');
  fig(`tokens.${n}.direct_per_message_ms`, t.direct_per_message, 'ms');
  fig(`tokens.${n}.ours_mtok_s`, oursTps / 1e6, 'M tokens/s');
  fig(`tokens.${n}.direct_mtok_s`, directTps / 1e6, 'M tokens/s');
  fig(`tokens.${n}.direct_per_message_mtok_s`, perMessageTps / 1e6, 'M tokens/s');
  fig(`tokens.${n}.ratio`, oursTps / directTps, 'x direct', { op: '>=', value: 0.8 });
}
fig('rss.compactor_at_start_mib', http.rssAtStart.compactor, 'MiB');
fig('rss.compactor_peak_mib', http.peakRss.compactor, 'MiB');
fig('rss.floor_at_start_mib', http.rssAtStart.floor, 'MiB');
fig('rss.floor_peak_mib', http.peakRss.floor, 'MiB');

meta.loadavg_end = loadavg();
meta.seconds = Math.round((performance.now() - T0) / 1000);
meta.dist_hash_end = distHash();
if (meta.dist_hash_end !== meta.dist_hash)
  log('WARNING: dist/ changed during the run (someone rebuilt it): figures mix two builds');

const met = (f) => (f.goal ? (f.goal.op === '<=' ? f.value <= f.goal.value : f.value >= f.goal.value) : undefined);

console.log(`\n# Window benchmarks: ${meta.date}, node ${meta.node}, ${meta.nproc} cpus (${meta.cpu}), commit ${meta.commit}`);
console.log('\ninputs:');
for (const i of INPUTS) {
  console.log(
    `  ${i.name.padEnd(10)} ${i.label}: ${i.messages.length} messages, ${(i.bytes / 2 ** 20).toFixed(2)} MiB, ${i.tokens} tokens; HTTP keep ${JSON.stringify(i.httpKeep)}, in-process keep {tokens: ${i.windowTokens}}`,
  );
}
console.log(
  `dist ${meta.dist_hash}${meta.dist_hash_end !== meta.dist_hash ? ` -> ${meta.dist_hash_end} (CHANGED during the run)` : ''}, src dirty: ${meta.src_dirty}`,
);
console.log(`load average at start ${meta.loadavg_start.join(' ')}, at end ${meta.loadavg_end.join(' ')}; ${meta.seconds} s`);
console.log(`\nmedians of ${REPS} repetitions (fresh process: ${FRESH_REPS}), minimum in brackets:`);
for (const f of figures) {
  const m = met(f);
  const goal = f.goal ? `goal ${f.goal.op} ${f.goal.value}  ${m ? 'MET' : 'MISSED'}` : '';
  const low = f.min !== undefined ? `(${fmt(f.min, 1)})` : '';
  console.log(
    `  ${f.key.padEnd(44)} ${fmt(f.value, f.unit === 'ms' ? 1 : 2).padStart(10)} ${low.padStart(9)} ${f.unit.padEnd(12)} ${goal}`,
  );
}

const out = {
  meta,
  inputs: INPUTS.map((i) => ({
    name: i.name,
    label: i.label,
    messages: i.messages.length,
    bytes: i.bytes,
    tokens: i.tokens,
    http_keep: i.httpKeep,
    window_tokens: i.windowTokens,
  })),
  figures: figures.map((f) => ({ ...f, met: met(f) })),
  raw: { http, fresh, window: windowR, tokens: tokensR },
};
const file = process.env.BENCH_OUT ?? `${ROOT}bench/out/window-${meta.date.replace(/[:.]/g, '-')}.json`;
mkdirSync(new URL('./out/', import.meta.url), { recursive: true });
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
log(`wrote ${file}`);
