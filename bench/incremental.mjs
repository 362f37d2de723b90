// A growing conversation (issue 40): 100 `/v1/fit` calls, each the previous history plus one tool
// call and its result (the load benchmark's history, django-16560, from 73 KB to all 196 KB), as an
// agent calls fit before every model call. Per call, the service's own CPU time (every thread's,
// bench/lib/cpu.mjs) against the echo floor's on the same body, so the figures hold on a busy
// machine; then the slope of CPU per call against history size (least squares, ms per 100 KB) and
// the totals. Goals: slope ≤ 2 ms per 100 KB, total ≤ 3× the floor's.
// Warm-up (`warm`): `grow` (the default), another history's growing conversation (pytest-6197,
// 84 calls), then a pause for the summaries it prepared: a sidecar that has served a conversation,
// its code compiled; `light`, five calls of a short history (the figures before round 7, which
// count compiling the summary and preparing paths: about 1 s of V8's compiler threads).
// Run: npm run build && node bench/incremental.mjs [runs=1] [target_tokens=12000] [warm=grow|light]
import { readFileSync } from 'node:fs';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { cpuMs, loadAverage } from './lib/cpu.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { startServer } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const RUNS = Number(process.argv[2] ?? 1);
const TARGET = Number(process.argv[3] ?? 12_000);
const WARM = process.argv[4] ?? 'grow';
if (WARM !== 'grow' && WARM !== 'light') throw new Error(`warm: grow or light, not ${WARM}`);
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
// 100 calls: the history up to a tool result, growing by one assistant call and its result.
const ENDS = Array.from({ length: 100 }, (_, i) => messages.length - 2 * (99 - i));
const bodies = ENDS.map((end) => JSON.stringify({ messages: messages.slice(0, end), target_tokens: TARGET, model: 'gpt-4o' }));
// Warm-up (JIT, encoders): another history, so that nothing of this one is cached before the run.
const warm = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-13670.json`, 'utf8'),
).messages;
const warmBody = JSON.stringify({ messages: warm, target_tokens: TARGET, model: 'gpt-4o' });
const grown = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__pytest-dev__pytest-6197.json`, 'utf8'),
).messages;
const warmGrowing = [];
for (let end = 20; end <= grown.length; end += 2) {
  warmGrowing.push(JSON.stringify({ messages: grown.slice(0, end), target_tokens: TARGET, model: 'gpt-4o' }));
}

async function post(url, body) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** CPU per call of `server` for each body, in order (ms). */
async function perCall(server, url) {
  const out = [];
  for (const body of bodies) {
    const before = cpuMs(server.pid);
    await post(url, body);
    out.push(cpuMs(server.pid) - before);
  }
  return out;
}

/** Least-squares slope of y against x. */
function slope(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return num / den;
}

const kb = bodies.map((b) => Buffer.byteLength(b) / 1024);
const load0 = loadAverage();
console.log(
  `# Incremental fit: ${new Date().toISOString()}, node ${process.version}, ${RUNS} run(s), target_tokens ${TARGET}, warm-up ${WARM}, load average ${load0}`,
);
const rows = [];
for (let run = 0; run < RUNS; run++) {
  const llm = await startFakeLlm({ delayMs: 20 });
  const compactor = await startServer('compactor', {
    env: {
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: `sqlite:/tmp/compactor-incremental-${process.pid}-${run}.db`,
      OPENAI_BASE_URL: llm.url,
      COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
      // Work measured, not shedding: on a busy machine every call is served.
      COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
    },
  });
  const floor = await startServer('floor');
  for (let i = 0; i < 5; i++) {
    await post(`${compactor.base}/v1/fit`, warmBody);
    await post(floor.url, warmBody);
  }
  if (WARM === 'grow') {
    for (const body of warmGrowing) {
      await post(`${compactor.base}/v1/fit`, body);
      await post(floor.url, body);
    }
    // The summaries the warm-up asked to prepare are made before the measured run starts.
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  const asked = llm.requests.length;
  const ours = await perCall(compactor, `${compactor.base}/v1/fit`);
  const made = llm.requests.length - asked;
  const base = await perCall(floor, floor.url);
  rows.push({ ours, base, llm: made });
  await compactor.stop();
  await floor.stop();
  await llm.stop();
}
const ours = ENDS.map((_, i) => median(rows.map((r) => r.ours[i])));
const base = ENDS.map((_, i) => median(rows.map((r) => r.base[i])));
console.log('\n| call | history KB | ours CPU ms | floor CPU ms |\n|---|---|---|---|');
for (const i of [0, 9, 19, 29, 39, 49, 59, 69, 79, 89, 99])
  console.log(`| ${i + 1} | ${fmt(kb[i])} | ${fmt(ours[i], 2)} | ${fmt(base[i], 2)} |`);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const oursSlope = slope(kb, ours) * 100;
const baseSlope = slope(kb, base) * 100;
// The first calls fill the count cache with the history's first 73 KB and warm this history's code paths.
const warmSlope = slope(kb.slice(10), ours.slice(10)) * 100;
const first10 = (xs) => median(xs.slice(0, 10));
const last10 = (xs) => median(xs.slice(-10));
console.log(
  `\nours: ${fmt(first10(ours), 2)} ms per call at the start (median of the first 10), ${fmt(last10(ours), 2)} at the end (last 10); slope ${fmt(oursSlope, 2)} ms per 100 KB (goal ≤ 2), over calls 11–100 ${fmt(warmSlope, 2)}; total ${fmt(sum(ours) / 1000, 2)} s`,
);
console.log(
  `floor: ${fmt(first10(base), 2)} → ${fmt(last10(base), 2)} ms; slope ${fmt(baseSlope, 2)} ms per 100 KB; total ${fmt(sum(base) / 1000, 2)} s`,
);
console.log(
  `total ours/floor: ${fmt(sum(ours) / sum(base), 2)}× (goal ≤ 3×); fake LLM calls per measured run: ${rows.map((r) => r.llm).join(', ')}`,
);
console.log(`load average at the end: ${loadAverage()}`);
