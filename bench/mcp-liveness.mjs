/**
 * `/health/live` while MCP searches read a 20 MiB original (issue 39, finding 1): one original
 * offloaded by `/v1/compact` into the default store (SQLite, a file in a temporary folder), then a
 * `POST /mcp` holding a JSON-RPC batch of 10 `tools/call` (the largest batch `/mcp` takes): `search`
 * for an exact string that is nowhere, one found at the original's end, an RE2 expression that is
 * nowhere, and `recall` of the original's first page, while a prober in its own process asks `/health/live` every 10 ms.
 *
 * With `--cpu-prof`, the server runs under `node --cpu-prof` and the longest stretch its main
 * thread spent without returning to the event loop is read from the profile (the probes' latency
 * also holds the prober's and the machine's own delays; the profile holds only the server's).
 *
 * Usage: npm run build && node bench/mcp-liveness.mjs [runs=3] [--cpu-prof]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMeta } from './lib/meta.mjs';
import { startProber } from './lib/prober.mjs';
import { peakRssMiB, startServer } from './lib/servers.mjs';
import { fmt, max, median } from './lib/stats.mjs';

const args = process.argv.slice(2);
const PROFILE = args.includes('--cpu-prof');
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const BATCH = 10;
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/**
 * The longest stretches the profiled thread ran without going idle, from `fromMs` on: consecutive
 * samples that are not waiting (`(idle)`, or `(program)`: native code with no JS frame on the
 * stack, mostly the event loop's own), their time deltas added up, each with the functions it
 * spent most in (self time, ms). Native code a JS function called (SQLite's reads, for one)
 * samples under that function, so it counts.
 */
function busyStretches(file, fromMs) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const idle = new Set(
    p.nodes.filter((n) => ['(idle)', '(program)', '(root)'].includes(n.callFrame.functionName)).map((n) => n.id),
  );
  const name = (id) => {
    const f = byId.get(id).callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
  };
  const stretches = [];
  let run = { ms: 0, self: new Map() };
  let at = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    at += (p.timeDeltas[i] ?? 0) / 1000;
    if (at < fromMs) continue;
    if (idle.has(p.samples[i])) {
      if (run.ms > 0) stretches.push(run);
      run = { ms: 0, self: new Map() };
    } else {
      run.ms += dt;
      const k = name(p.samples[i]);
      run.self.set(k, (run.self.get(k) ?? 0) + dt);
    }
  }
  if (run.ms > 0) stretches.push(run);
  return stretches.sort((a, b) => b.ms - a.ms);
}

const meta = runMeta();
console.log(
  `# /health/live during an MCP batch of ${BATCH} tool calls over a 20 MiB original (${RUNS} runs each) ${JSON.stringify(meta)}`,
);
const dir = mkdtempSync(join(tmpdir(), 'compactor-mcp-live-'));
const profiles = join(dir, 'profiles');
const spawned = performance.now();
const server = await startServer('compactor', {
  env: { COMPACTOR_STORE_URL: `sqlite:${join(dir, 'c.db')}`, COMPACTOR_PREPARE: 'off', LOG_LEVEL: 'warn' },
  nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [],
});

const line = 'drwxr-xr-x 2 root root 4096 Dec  7 05:01 some/where/in/the/tree\n';
const output = `${line.repeat(Math.ceil((20 * 1024 * 1024) / line.length))}the end of the listing`;
const compact = await fetch(`${server.base}/v1/compact`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    format: 'openai-chat',
    keep_tool_uses: 0,
    min_tokens: 1,
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: output },
      { role: 'assistant', content: 'done' },
    ],
  }),
});
if (!compact.ok) throw new Error(`compact: HTTP ${compact.status}`);
const id = (await compact.json()).artifacts[0].id;

const search = (query, regex) => ({ name: 'search', arguments: { query, regex } });
const calls = [
  { name: 'search: exact, nowhere', call: search('nowhere-to-be-found', false), expect: /No original matches/ },
  { name: 'search: exact, at the end', call: search('the end of the listing', false), expect: /1 originals match/ },
  { name: 'search: RE2, nowhere', call: search('no+where[0-9]', true), expect: /No original matches/ },
  { name: 'recall: its first page', call: { name: 'recall', arguments: { id } }, expect: /--- original ---/ },
];
// The profile's clock starts with the process: what came before the first batch (boot, the compaction) is left out.
const batchesFrom = performance.now() - spawned;
console.log(
  `\n| batch of ${BATCH} tool calls | runs | batch ms (median) | live p50 ms | live p99 ms | live max ms (max over runs) |`,
);
console.log('|---|---|---|---|---|---|');
for (const q of calls) {
  const batch = Array.from({ length: BATCH }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: q.call }));
  const ms = [];
  const p50 = [];
  const p99 = [];
  const worst = [];
  for (let r = 0; r < RUNS; r++) {
    const prober = startProber(server.base);
    await new Promise((res) => setTimeout(res, 100));
    const t0 = performance.now();
    const res = await fetch(`${server.base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify(batch) });
    const answers = await res.json();
    ms.push(performance.now() - t0);
    const lat = await prober.stop();
    if (res.status !== 200 || !answers.every((a) => q.expect.test(a.result?.content?.[0]?.text ?? ''))) {
      throw new Error(`${q.name}: HTTP ${res.status} ${JSON.stringify(answers).slice(0, 300)}`);
    }
    p50.push(pct(lat, 50));
    p99.push(pct(lat, 99));
    worst.push(max(lat));
  }
  console.log(`| ${q.name} | ${RUNS} | ${fmt(median(ms), 0)} | ${fmt(median(p50))} | ${fmt(median(p99))} | ${fmt(max(worst))} |`);
}
console.log(`\npeak RSS ${fmt(peakRssMiB(server.pid), 0)} MiB; loadavg at the end ${JSON.stringify(runMeta().loadavg_start)}`);
await server.stop();
if (PROFILE) {
  // CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile: the main thread is thread 0; workers are left aside.
  const main = readdirSync(profiles).find((f) => f.split('.')[4] === '0');
  const longest = busyStretches(join(profiles, main), batchesFrom).slice(0, 5);
  console.log(
    `main thread's longest stretches without the event loop during the batches (ms, from --cpu-prof): ${longest.map((x) => fmt(x.ms)).join(', ')}`,
  );
  for (const x of longest.slice(0, 2)) {
    const top = [...x.self].sort((a, b) => b[1] - a[1]).slice(0, 4);
    console.log(`  ${fmt(x.ms)} ms: ${top.map(([k, ms]) => `${k} ${fmt(ms)}`).join('; ')}`);
  }
}
if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);
