// A growing conversation through the proxy (issue 40): bench/incremental.mjs's measure, in the
// proxy's form. A Claude Code-shaped Anthropic conversation (bench/lib/proxy-bodies.mjs, every
// text our own) grows by one Bash step (tool_use, tool_result) per call, 100 calls from about
// 73 KB to 350 KB, sent one at a time to `/anthropic/v1/messages` of a proxy (`node
// dist/server.js`, SQLite store) in front of the repository's fake provider in a process of its
// own (bench/lib/fake-provider-child.mjs, as bench/proxy.mjs starts it). The model is one the
// model table does not place, with COMPACTOR_DEFAULT_CONTEXT_WINDOW (default 48,000 tokens): the
// conversation crosses the proxy's limit about halfway, so the later calls are reduced (fit), as
// an agent's long session is. Per call, the proxy process's own CPU (every thread's,
// bench/lib/cpu.mjs) against the floor's on the same bodies: the echo floor (a Fastify route
// that parses the body and returns it: what any process that reads and forwards it pays), and the
// proxy's own with `x-compactor-bypass: 1` (read, forward, stream back; no state, no fit). Then
// the slope of CPU per call against history size (least squares, ms per 100 KB) and the totals.
// Warm-up (`warm`): `grow` (the default), another session's conversation grown the same way (100
// calls), then a pause for the summaries it prepared: a proxy that has served a session, its code
// compiled; `light`, five calls of a short conversation (the figures before round 7).
// Run: npm run build && node bench/incremental-proxy.mjs [runs=1] [window_tokens=48000] [warm=grow|light]
// Env: CPU_PROFILE_DIR: the proxy runs with --cpu-prof there (read shares, not milliseconds).

import { cpuMs, loadAverage } from './lib/cpu.mjs';
import { startFakeProvider } from './lib/fake-provider-child.mjs';
import { claudeCodeRequest } from './lib/proxy-bodies.mjs';
import { timed } from './lib/proxy-wire.mjs';
import { startServer } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const RUNS = Number(process.argv[2] ?? 1);
const WINDOW = Number(process.argv[3] ?? 48_000);
const WARM = process.argv[4] ?? 'grow';
if (WARM !== 'grow' && WARM !== 'light') throw new Error(`warm: grow or light, not ${WARM}`);
const MODEL = 'bench-agent-model';
// About 3.3 KB a step: 108 steps, the first call ending on step 9's result.
const { body: full, headers } = claudeCodeRequest({ bytes: 400_000, session: 'incremental', model: MODEL });
// The conversation's first message is the task; then pairs of steps. Call i ends on step first + i's result.
const first = 9;
const steps = (full.messages.length - 1) / 2;
if (steps < first + 99) throw new Error(`the conversation has only ${steps} steps`);
/** The 100 calls of a conversation, each ending on one step's result more. */
const grow = (whole) =>
  Array.from({ length: 100 }, (_, i) => {
    const messages = whole.messages
      .slice(0, 1 + 2 * (first + i))
      .map((m) => ({ ...m, content: m.content.map((b) => ({ ...b })) }));
    for (const m of messages) for (const b of m.content) delete b.cache_control;
    // The moving cache breakpoint on the newest result, as Claude Code sends it.
    messages.at(-1).content.at(-1).cache_control = { type: 'ephemeral' };
    return Buffer.from(JSON.stringify({ ...whole, messages }));
  });
const bodies = grow(full);
// Warm-up: another session's shorter conversation, so that nothing of this one is known before the run.
const warm = claudeCodeRequest({ bytes: 60_000, session: 'warm-up', model: MODEL });
const warmBody = Buffer.from(JSON.stringify(warm.body));
// A warm-up that grows: another session's conversation, as long as this one.
const warmGrown = claudeCodeRequest({ bytes: 400_000, session: 'warm-up-grown', model: MODEL });
const warmGrowing = WARM === 'grow' ? grow(warmGrown.body) : [];

/** CPU per call of `server` for each body, in order (ms), and the x-compactor outcomes. */
async function perCall(server, url, h) {
  const out = [];
  const outcomes = {};
  for (const body of bodies) {
    const before = cpuMs(server.pid);
    const res = await timed(url, h, body);
    out.push(cpuMs(server.pid) - before);
    const key = (res.compactor ?? 'none').split(';')[0];
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  return { out, outcomes };
}

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

const kb = bodies.map((b) => b.length / 1024);
console.log(
  `# Incremental proxy: ${new Date().toISOString()}, node ${process.version}, ${RUNS} run(s), window ${WINDOW} tokens, warm-up ${WARM}, ${fmt(kb[0])} → ${fmt(kb[99])} KB, load average ${loadAverage()}`,
);
const rows = [];
for (let run = 0; run < RUNS; run++) {
  const fake = await startFakeProvider();
  const profile = process.env.CPU_PROFILE_DIR;
  const proxy = await startServer('compactor', {
    nodeArgs: profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [],
    env: {
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: `sqlite:/tmp/compactor-incremental-proxy-${process.pid}-${run}.db`,
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_DEFAULT_CONTEXT_WINDOW: String(WINDOW),
      COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
    },
  });
  const floor = await startServer('floor');
  const url = `${proxy.base}/anthropic/v1/messages`;
  for (let i = 0; i < 5; i++) {
    await timed(url, warm.headers, warmBody);
    await timed(floor.url, { 'content-type': 'application/json' }, warmBody);
  }
  for (const body of warmGrowing) {
    await timed(url, warmGrown.headers, body);
    await timed(floor.url, { 'content-type': 'application/json' }, body);
  }
  // The summaries the warm-up asked to prepare are made before the measured run starts.
  if (WARM === 'grow') await new Promise((resolve) => setTimeout(resolve, 2000));
  const ours = await perCall(proxy, url, headers);
  const base = await perCall(floor, floor.url, { 'content-type': 'application/json' });
  // The proxy's own cost without reduction (read, forward, stream back), on the same bodies after.
  const bypass = await perCall(proxy, url, { ...headers, 'x-compactor-bypass': '1' });
  rows.push({ ours: ours.out, base: base.out, bypass: bypass.out, outcomes: ours.outcomes });
  await proxy.stop();
  await floor.stop();
  await fake.stop();
}
const ours = bodies.map((_, i) => median(rows.map((r) => r.ours[i])));
const base = bodies.map((_, i) => median(rows.map((r) => r.base[i])));
const bypass = bodies.map((_, i) => median(rows.map((r) => r.bypass[i])));
console.log('\n| call | body KB | proxy CPU ms | bypass CPU ms | floor CPU ms |\n|---|---|---|---|---|');
for (const i of [0, 9, 19, 29, 39, 49, 59, 69, 79, 89, 99])
  console.log(`| ${i + 1} | ${fmt(kb[i])} | ${fmt(ours[i], 2)} | ${fmt(bypass[i], 2)} | ${fmt(base[i], 2)} |`);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const first10 = (xs) => median(xs.slice(0, 10));
const last10 = (xs) => median(xs.slice(-10));
console.log(
  `\nproxy: ${fmt(first10(ours), 2)} ms per call at the start (median of the first 10), ${fmt(last10(ours), 2)} at the end (last 10); slope ${fmt(slope(kb, ours) * 100, 2)} ms per 100 KB, over calls 11–100 ${fmt(slope(kb.slice(10), ours.slice(10)) * 100, 2)}; total ${fmt(sum(ours) / 1000, 2)} s`,
);
console.log(
  `floor: ${fmt(first10(base), 2)} → ${fmt(last10(base), 2)} ms; slope ${fmt(slope(kb, base) * 100, 2)} ms per 100 KB; total ${fmt(sum(base) / 1000, 2)} s`,
);
console.log(
  `bypass (x-compactor-bypass: 1, no reduction): ${fmt(first10(bypass), 2)} → ${fmt(last10(bypass), 2)} ms; total ${fmt(sum(bypass) / 1000, 2)} s`,
);
console.log(
  `total proxy/floor: ${fmt(sum(ours) / sum(base), 2)}×; outcomes per run: ${rows.map((r) => JSON.stringify(r.outcomes)).join(', ')}`,
);
console.log(`load average at the end: ${loadAverage()}`);
