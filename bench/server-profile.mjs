// CPU profiles of the running service (every thread: main and workers) serving one endpoint on the
// load benchmark's body, 4 connections, after a warm-up; prints each thread's heaviest functions
// (diagnostic for issue 40). Profiles sample wall time while a thread runs JavaScript: on a busy
// machine a thread descheduled mid-call is charged to that call, so read shares, not milliseconds.
// Run: npm run build && node bench/server-profile.mjs [window|compact|fit] [requests=400] [grow]
//   grow: instead, bench/incremental.mjs's 100-call growing conversation, one call at a time.
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import autocannon from 'autocannon';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { cpuMs, cpuPerRequest } from './lib/cpu.mjs';
import { fold, top } from './lib/cpuprofile.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { startServer } from './lib/servers.mjs';

const [name = 'fit', amount = '400', mode] = process.argv.slice(2);
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const BODIES = {
  window: { messages, keep: { messages: 40 }, model: 'gpt-4o' },
  compact: { messages, keep_tool_uses: 3, model: 'gpt-4o' },
  fit: { messages, target_tokens: 12_000, model: 'gpt-4o' },
};
const dir = `bench/out/profiles/server-${name}-${Date.now()}`;
mkdirSync(dir, { recursive: true });
const DB = `/tmp/compactor-prof-${process.pid}.db`;
const llm = await startFakeLlm({ delayMs: 20 });
const server = await startServer('compactor', {
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  env: {
    LOG_LEVEL: 'warn',
    COMPACTOR_STORE_URL: `sqlite:${DB}`,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
    COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
  },
});
const json = JSON.stringify(BODIES[name]);
const url = `${server.base}/v1/${name}`;
if (mode === 'grow') {
  // bench/incremental.mjs's conversation: 100 calls, each the history up to one tool call and result more, one at a time.
  const ends = Array.from({ length: 100 }, (_, i) => messages.length - 2 * (99 - i));
  const before = cpuMs(server.pid);
  for (const end of ends) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...BODIES[name], messages: messages.slice(0, end) }),
    });
    await res.arrayBuffer();
  }
  console.log(
    `${name}: ${((cpuMs(server.pid) - before) / 100).toFixed(2)} ms CPU per call over a growing conversation (profiling on)`,
  );
} else {
  await cpuPerRequest(autocannon, server, url, json, 50, 4);
  const { ms } = await cpuPerRequest(autocannon, server, url, json, Number(amount), 4);
  console.log(`${name}: ${ms.toFixed(2)} ms CPU per request (profiling on)`);
}
await server.stop();
await llm.stop();
for (const suffix of ['', '-wal', '-shm']) rmSync(`${DB}${suffix}`, { force: true });
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const p = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8'));
  const selfOf = new Map();
  for (let i = 0; i < p.samples.length; i++) selfOf.set(p.samples[i], (selfOf.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  const { self, incl } = fold(p, selfOf);
  const n = Number(amount) + 50;
  let busy = 0;
  for (const [k, us] of self) if (!/^\((root|program|idle)\)|^atomicsWaitLoop/.test(k)) busy += us;
  console.log(
    `\n## ${file}: ${(busy / 1000 / n).toFixed(2)} ms busy per request (over ${n}, start-up included)\nself:\n${top(self, 30, n, /^\((root|program|idle)\)/)}`,
  );
  console.log(`inclusive:\n${top(incl, 40, n, /^\((root|program|idle)\)/)}`);
}
