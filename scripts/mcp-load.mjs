#!/usr/bin/env node
// Measures one MCP load (issue 39, finding 1) against a built service (dist/): one 20 MiB original
// offloaded by /v1/compact, then a POST /mcp holding a JSON-RPC batch of 100 `search` calls for a
// string that is nowhere, while /health/live is polled. Prints peak RSS of the service, the batch's
// answer and time, and the slowest /health/live answer.
// The store is SQLite in a temporary folder (the default kind), so each search reads its own copy.
// Usage: node scripts/mcp-load.mjs [path to the service's dist/server.js] [messages in the batch, 100]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const server = resolve(process.argv[2] ?? 'dist/server.js');
const port = await new Promise((done) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => done(port));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'mcp-load-'));
const child = spawn(process.execPath, [server], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    COMPACTOR_STORE_URL: `sqlite:${join(dir, 'compactor.db')}`,
    COMPACTOR_PREPARE: 'off',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const base = `http://127.0.0.1:${port}`;
const rssMiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/health/ready`)).ok) break;
  } catch {}
  if (i > 600) throw new Error('the service did not start');
  await new Promise((r) => setTimeout(r, 100));
}
const line = 'drwxr-xr-x 2 root root 4096 Dec  7 05:01 some/where/in/the/tree\n';
const output = line.repeat(Math.ceil((20 * 1024 * 1024) / line.length));
const compact = await fetch(`${base}/v1/compact`, {
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
await compact.arrayBuffer();
if (!compact.ok) throw new Error(`compact: ${compact.status}`);
const before = rssMiB();
let peak = before;
const sampler = setInterval(() => {
  peak = Math.max(peak, rssMiB());
}, 20);
const batch = Array.from({ length: Number(process.argv[3] ?? 100) }, (_, i) => ({
  jsonrpc: '2.0',
  id: i + 1,
  method: 'tools/call',
  params: { name: 'search', arguments: { query: 'nowhere-to-be-found' } },
}));
let done = false;
const started = performance.now();
const answer = fetch(`${base}/mcp`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify(batch),
}).then(async (res) => {
  const text = await res.text();
  done = true;
  return { status: res.status, ms: performance.now() - started, bytes: text.length };
});
let slowest = 0;
let probes = 0;
while (!done) {
  const t0 = performance.now();
  await (await fetch(`${base}/health/live`)).arrayBuffer();
  slowest = Math.max(slowest, performance.now() - t0);
  probes++;
}
const result = await answer;
// The same load as twenty parallel single searches (each one message).
const t1 = performance.now();
await Promise.all(
  Array.from({ length: 20 }, (_, i) => ({ ...batch[0], id: i + 1 })).map((one) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(one),
    }).then((r) => r.text()),
  ),
);
const parallelMs = performance.now() - t1;
clearInterval(sampler);
const next = await fetch(`${base}/v1/tokens`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ format: 'openai-chat', messages: [{ role: 'user', content: 'hello' }] }),
});
console.log(
  JSON.stringify({
    batch: { status: result.status, ms: Math.round(result.ms), answer_bytes: result.bytes },
    rss_mib: { before: Math.round(before), peak: Math.round(peak) },
    health_live: { probes, slowest_ms: Math.round(slowest) },
    twenty_parallel_single_searches_ms: Math.round(parallelMs),
    next_v1_status: next.status,
  }),
);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
rmSync(dir, { recursive: true, force: true });
