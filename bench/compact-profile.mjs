/**
 * CPU profile of the Compactor server on /v1/compact and /v1/expand (diagnostic for issue 3; not
 * part of bench/compact.mjs). For each input (the generated 2,000-message history, the largest
 * corpus transcript and the mid-size one of the throughput test), starts `node --cpu-prof dist/server.js` on a fresh SQLite store, warms it up
 * on histories that are never analyzed, then runs three phases:
 *   - cold: PROFILE_N unseen histories (every message misses the count cache);
 *   - warm: the last of them with one (different) message appended, PROFILE_N times;
 *   - expand: the cold call's compacted history expanded PROFILE_N times.
 * Only the samples taken inside each phase's time window are counted (the profile's clock and
 * process.hrtime are both CLOCK_MONOTONIC), and every figure is divided by PROFILE_N: ms per request.
 * Prints the functions with the most self and inclusive time (for the mid-size transcript, the warm
 * phase only: the request the throughput test repeats); writes the .cpuprofile files under
 * bench/out/profiles/.
 *
 * Usage: npm run build && node bench/compact-profile.mjs
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { fold, top } from './lib/cpuprofile.mjs';
import { generateHistory, nextAssistantMessage, salted } from './lib/generate.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const N = Number(process.env.PROFILE_N ?? 8);
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const LARGEST = `${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__psf__requests-1142.json`;
/** The body of the throughput test in bench/compact.mjs. */
const MID = `${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-11138.json`;
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

const INPUTS = [
  { name: 'generated', messages: generateHistory({ seed: 42 }), model: 'gpt-4o' },
  ...[
    ['corpus', LARGEST],
    ['mid', MID],
  ].map(([name, path]) => {
    const file = JSON.parse(readFileSync(path, 'utf8'));
    return { name, messages: file.messages, model: file.meta.model };
  }),
];

async function call(base, path, payload) {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    body: JSON.stringify(payload),
    headers: { 'content-type': 'application/json' },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return { ms: performance.now() - t0, out: JSON.parse(text) };
}

async function profiled(input) {
  const dir = `${ROOT}bench/out/profiles/${stamp}-compact-${input.name}`;
  mkdirSync(dir, { recursive: true });
  const storeDir = `${os.tmpdir()}/compactor-profile-${process.pid}-${input.name}`;
  const server = await startServer('compactor', {
    env: { COMPACTOR_STORE_URL: `sqlite:${storeDir}/store.db` },
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  const body = (messages) => ({ messages, model: input.model });
  const phases = {};
  const phase = async (name, fn) => {
    const times = [];
    const start = nowUs();
    for (let i = 0; i < N; i++) times.push(await fn(i));
    phases[name] = { start, end: nowUs(), times };
  };
  try {
    for (let w = 0; w < 2; w++) {
      const h = salted(input.messages, `warmup-${w}`);
      const c = await call(server.base, '/v1/compact', body(h));
      await call(server.base, '/v1/compact', body([...h, nextAssistantMessage(w)]));
      await call(server.base, '/v1/expand', { messages: c.out.messages });
    }
    let history;
    let compacted;
    await phase('cold', async (i) => {
      history = salted(input.messages, `cold-${i}`);
      const r = await call(server.base, '/v1/compact', body(history));
      compacted = r.out.messages;
      return r.ms;
    });
    await phase('warm', async (i) => (await call(server.base, '/v1/compact', body([...history, nextAssistantMessage(i)]))).ms);
    await phase('expand', async () => (await call(server.base, '/v1/expand', { messages: compacted })).ms);
  } finally {
    await server.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  return { file: `${dir}/${file}`, phases };
}

/** Self and inclusive time per function (name, file, line) for the samples in [start, end). */
function analyze(p, start, end) {
  const selfOf = new Map();
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (t < start || t >= end) continue;
    selfOf.set(p.samples[i], (selfOf.get(p.samples[i]) ?? 0) + dt);
    total += dt;
  }
  return { ...fold(p, selfOf), total };
}

for (const input of INPUTS) {
  const { file, phases } = await profiled(input);
  const p = JSON.parse(readFileSync(file, 'utf8'));
  console.log(`\n# ${input.name}: ${input.messages.length} messages; profile ${file}`);
  for (const [name, ph] of Object.entries(phases)) {
    if (input.name === 'mid' && name !== 'warm') continue;
    const { self, incl, total } = analyze(p, ph.start, ph.end);
    const heaviest = (m, n) => top(m, n, N, /^\((root|idle)\)/);
    const idle = (self.get('(idle) ') ?? 0) / 1000 / N;
    console.log(
      `\n## ${input.name} ${name}: ${N} requests; client ms ${ph.times.map((x) => x.toFixed(0)).join(' ')}; sampled ${(total / 1000 / N).toFixed(1)} ms/request, of which idle ${idle.toFixed(1)}`,
    );
    console.log(`\nself time per request:\n${heaviest(self, 22)}`);
    console.log(`\ninclusive time per request:\n${heaviest(incl, 40)}`);
  }
}
