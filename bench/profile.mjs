/**
 * CPU profiles of the Compactor server (diagnostic; not part of `npm run bench`). Starts
 * `node --cpu-prof dist/server.js` twice on the generated 2,000-message history:
 *   - "cold": COLD requests, each a history the server has not seen;
 *   - "warm": one cold request, then WARM requests that each append one message.
 * Writes the .cpuprofile files under bench/out/profiles/ (open them in Chrome DevTools) and prints
 * the functions with the most self and inclusive time, per request.
 *
 * Usage: npm run build && node bench/profile.mjs
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fold, top } from './lib/cpuprofile.mjs';
import { generateHistory, nextAssistantMessage, salted } from './lib/generate.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const COLD = Number(process.env.PROFILE_COLD ?? 6);
const WARM = Number(process.env.PROFILE_WARM ?? 30);
const PORT = 18000 + Math.floor(Math.random() * 1000);
const stamp = new Date().toISOString().replace(/[:.]/g, '-');

async function profiled(name, bodies) {
  const dir = `${ROOT}bench/out/profiles/${stamp}-${name}`;
  mkdirSync(dir, { recursive: true });
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, `${ROOT}dist/server.js`], {
    env: { ...process.env, PORT: String(PORT), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((r) => child.once('exit', r));
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${PORT}/health/live`);
      await res.arrayBuffer();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const times = [];
  for (const body of bodies) {
    const t0 = performance.now();
    const res = await fetch(`http://127.0.0.1:${PORT}/v1/window`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    times.push(performance.now() - t0);
  }
  child.kill('SIGTERM');
  await exited;
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  return { file: `${dir}/${file}`, times };
}

/** Self and inclusive time per function (name, file, line) from a .cpuprofile. */
function analyze(file) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const selfOf = new Map();
  for (let i = 0; i < p.samples.length; i++) selfOf.set(p.samples[i], (selfOf.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  return fold(p, selfOf);
}

function print(title, { file, times }, requests) {
  const { self, incl } = analyze(file);
  const heaviest = (m, n) => top(m, n, requests, /^\((root|program|idle)\)/);
  console.log(`\n## ${title}\nprofile: ${file}\nclient times (ms): ${times.map((t) => t.toFixed(0)).join(' ')}`);
  console.log(`\nself time (divided by ${requests} requests; includes start-up work):\n${heaviest(self, 18)}`);
  console.log(`\ninclusive time:\n${heaviest(incl, 30)}`);
}

const base = generateHistory({ seed: 42 });
const bodyOf = (messages) => JSON.stringify({ messages, model: 'gpt-4o', keep: { messages: 200 } });

const cold = await profiled(
  'cold',
  Array.from({ length: COLD }, (_, i) => bodyOf(salted(base, `cold-${i}`))),
);
print(`cold: ${COLD} unseen histories`, cold, COLD);

const history = salted(base, 'warm');
const warmBodies = [bodyOf(history)];
for (let i = 0; i < WARM; i++) warmBodies.push(bodyOf([...history, ...salted([nextAssistantMessage(i)], `warm-${i}`)]));
const warm = await profiled('warm', warmBodies);
print(`warm: 1 cold request, then ${WARM} with one message appended (figures divided by ${WARM})`, warm, WARM);
