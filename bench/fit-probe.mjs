// Where fit's slow requests wait (diagnostic for the Load section of RESULTS.md): 20 s of /v1/fit
// at 64 connections, then the client's latencies, how evenly the connections were served, and the
// server's own duration histogram (from onRequest to the reply).
// Run: npm run build && node bench/fit-probe.mjs
//      PROBE_NODE_ARGS="--max-semi-space-size=64" node bench/fit-probe.mjs   (fewer young-GC pauses)
//      PIN=1 taskset -c 1 node bench/fit-probe.mjs                           (server on core 0)
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { startServer } from './lib/servers.mjs';

const messages = JSON.parse(
  readFileSync(
    new URL('../../shared/corpus/real/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json', import.meta.url),
    'utf8',
  ),
).messages;
const llm = await startFakeLlm({ delayMs: 200 });
const s = await startServer('compactor', {
  nodeArgs: (process.env.PROBE_NODE_ARGS ?? '').split(' ').filter(Boolean),
  env: {
    LOG_LEVEL: 'warn',
    COMPACTOR_STORE_URL: `sqlite:/tmp/probe-${process.pid}.db`,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake',
    COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
  },
});

import { spawnSync } from 'node:child_process';

if (process.env.PIN) spawnSync('taskset', ['-a', '-p', '-c', '0', String(s.pid)]);
const perConn = new Map();
const r = await autocannon({
  url: `${s.base}/v1/fit`,
  method: 'POST',
  connections: 64,
  duration: 20,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ messages, target_tokens: 12000, model: 'gpt-4o' }),
  setupClient: (client) => {
    let n = 0;
    perConn.set(client, 0);
    client.on('response', () => perConn.set(client, ++n));
  },
});
const counts = [...perConn.values()].sort((a, b) => a - b);
console.log({
  timeouts: r.timeouts,
  max: r.latency.max,
  p99: r.latency.p99,
  p50: r.latency.p50,
  rps: r.requests.average,
  perConnMin: counts[0],
  perConnMedian: counts[32],
  perConnMax: counts.at(-1),
});
const m = await (await fetch(`${s.base}/metrics`)).text();
console.log(
  m
    .split('\n')
    .filter((l) => l.startsWith('compactor_http_request_duration_seconds_bucket') && l.includes('/v1/fit'))
    .join('\n'),
);
await s.stop();
await llm.stop();
