// Throughput of one build's service (diagnostic for issue 40): req/s, p50/p99 and the service's own CPU
// per request and cores used (every thread, bench/lib/cpu.mjs) for one endpoint on the load
// benchmark's body, after a warm-up, production defaults (one worker on two cores, SQLite, the fake
// LLM at 200 ms). `root` is a checkout with its dist/ built (another worktree: two builds compared).
// Run: npm run build && node bench/throughput.mjs <root=.> [window|compact|fit] [connections=8] [seconds=10]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { cpuMs } from './lib/cpu.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';

const [given = '.', name = 'fit', conns = '8', secs = '10'] = process.argv.slice(2);
const root = resolve(given);
const DB = `/tmp/throughput-${process.pid}.db`;
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const BODIES = {
  window: { messages, keep: { messages: 40 }, model: 'gpt-4o' },
  compact: { messages, keep_tool_uses: 3, model: 'gpt-4o' },
  fit: { messages, target_tokens: 12_000, model: 'gpt-4o' },
};
const llm = await startFakeLlm({ delayMs: 200 });
const port = 19000 + Math.floor(Math.random() * 500);
const child = spawn(process.execPath, [`${root}/dist/server.js`], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    COMPACTOR_BODY_LIMIT: String(32 << 20),
    COMPACTOR_STORE_URL: `sqlite:${DB}`,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_SUMMARIZER_CONCURRENCY: '16',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
for (;;) {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/health/live`);
    await r.arrayBuffer();
    if (r.ok) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 50));
}
const url = `http://127.0.0.1:${port}/v1/${name}`;
const body = JSON.stringify(BODIES[name]);
const go = (duration) =>
  new Promise((res, rej) =>
    autocannon(
      { url, method: 'POST', connections: Number(conns), duration, headers: { 'content-type': 'application/json' }, body },
      (e, r) => (e ? rej(e) : res(r)),
    ),
  );
await go(3);
await new Promise((r) => setTimeout(r, 2000));
await go(3);
const c0 = cpuMs(child.pid);
const r = await go(Number(secs));
const cpu = cpuMs(child.pid) - c0;
console.log(
  `${root} /v1/${name} c=${conns}: ${r.requests.average.toFixed(1)} req/s, p50 ${r.latency.p50} p99 ${r.latency.p99}, 2xx ${r['2xx']} non2xx ${r.non2xx}, cpu ${(cpu / r['2xx']).toFixed(2)} ms/req, cores used ${(cpu / (secs * 1000)).toFixed(2)}`,
);
child.kill('SIGTERM');
await once(child, 'exit');
await llm.stop();
for (const suffix of ['', '-wal', '-shm']) rmSync(`${DB}${suffix}`, { force: true });
