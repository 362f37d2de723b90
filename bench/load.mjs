// Load benchmark (issue 5): requests per second and p50/p99 latency for /v1/window, /v1/compact and
// /v1/fit (fake LLM answering in 200 ms) at 1, 8, 32 and 64 connections, the echo floor with the
// same bodies in the same run as ratios, peak RSS; then 64 connections for 30 s on fit and window
// with every response checked; then past saturation (512 connections on fit): 503s with
// retry-after, no crash, serving again afterwards. Compactor runs with its production defaults
// (load shedding on: COMPACTOR_MAX_QUEUE_WAIT_MS=5000, COMPACTOR_MAX_EVENT_LOOP_DELAY_MS=1000).
// Run: npm run build && node bench/load.mjs [seconds-per-cell=10] [long-seconds=30] [saturating-connections=512]
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { metric, peakRssMiB, startServer } from './lib/servers.mjs';
import { fmt } from './lib/stats.mjs';

const CELL = Number(process.argv[2] ?? 10);
const LONG = Number(process.argv[3] ?? 30);
const OVER = Number(process.argv[4] ?? 512);
const CONNECTIONS = [1, 8, 32, 64];
const corpus = JSON.parse(readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'));
const messages = corpus.messages;
const BODIES = {
  window: { messages, keep: { messages: 40 }, model: 'gpt-4o' },
  compact: { messages, keep_tool_uses: 3, model: 'gpt-4o' },
  fit: { messages, target_tokens: 12_000, model: 'gpt-4o' },
};

function run(url, body, connections, duration, check) {
  let invalid = 0;
  let shedWithoutRetryAfter = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        setupClient: (client) => {
          client.on('headers', ({ statusCode, headers }) => {
            if (statusCode !== 503) return;
            const names = headers.filter((_, i) => i % 2 === 0).map((h) => String(h).toLowerCase());
            if (!names.includes('retry-after')) shedWithoutRetryAfter++;
          });
          if (check)
            client.on('body', (buf) => {
              if (!check(buf)) invalid++;
            });
        },
      },
      (error, result) => {
        if (error) reject(error);
        else {
          const non2xx = result.non2xx;
          resolve({
            rps: result.requests.average,
            p50: result.latency.p50,
            p99: result.latency.p99,
            errors: result.errors,
            timeouts: result.timeouts,
            max: result.latency.max,
            statuses: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])),
            shedWithoutRetryAfter,
            non2xx,
            invalid,
            total: result.requests.total,
          });
        }
      },
    );
  });
}

const llm = await startFakeLlm({ delayMs: 200 });
const compactor = await startServer('compactor', {
  env: {
    LOG_LEVEL: 'warn',
    COMPACTOR_STORE_URL: `sqlite:/tmp/compactor-load-${process.pid}.db`,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_SUMMARIZER_CONCURRENCY: '16',
  },
});
const floor = await startServer('floor');
const date = new Date().toISOString();
console.log(`# Load: ${date}, node ${process.version}, ${CELL} s per cell, ${LONG} s long run`);
console.log(
  '| endpoint | connections | req/s | p50 ms | p99 ms | floor req/s | floor p50 | floor p99 | floor/ours req/s | errors | non-2xx |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
const rows = [];
for (const [name, body] of Object.entries(BODIES)) {
  for (const c of CONNECTIONS) {
    const ours = await run(`${compactor.base}/v1/${name}`, body, c, CELL);
    const base = await run(floor.url, body, c, CELL);
    rows.push({ name, c, ours, base });
    console.log(
      `| /v1/${name} | ${c} | ${fmt(ours.rps)} | ${ours.p50} | ${ours.p99} | ${fmt(base.rps)} | ${base.p50} | ${base.p99} | ${fmt(base.rps / ours.rps, 2)}x | ${ours.errors} | ${ours.non2xx} |`,
    );
  }
}
// A body cut off when the run stops mid-response does not parse: counted apart, not as invalid.
let cut = 0;
const valid = (buf) => {
  let json;
  try {
    json = JSON.parse(buf.toString('utf8'));
  } catch {
    cut++;
    return true;
  }
  return Array.isArray(json.messages) && json.messages.length > 0 && json.tokens.after <= json.tokens.before;
};
console.log(`\n## 64 connections for ${LONG} s, every response checked`);
for (const name of ['fit', 'window']) {
  const r = await run(`${compactor.base}/v1/${name}`, BODIES[name], 64, LONG, valid);
  console.log(
    `/v1/${name}: ${r.total} requests, ${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms, errors ${r.errors} (timeouts ${r.timeouts}), non-2xx ${r.non2xx}, invalid ${r.invalid}, cut at stop ${cut}`,
  );
  cut = 0;
}
console.log(`\n## Past saturation: ${OVER} connections on /v1/fit for 10 s`);
const over = await run(`${compactor.base}/v1/fit`, BODIES.fit, OVER, 10);
console.log(
  `statuses ${JSON.stringify(over.statuses)}, errors ${over.errors} (timeouts ${over.timeouts}), 503 without retry-after ${over.shedWithoutRetryAfter}, p50 ${over.p50} ms, p99 ${over.p99} ms`,
);
// Afterwards, as a client would: retry after what retry-after says until served.
const shedAt = performance.now();
let after;
for (let i = 0; i < 30; i++) {
  after = await fetch(`${compactor.base}/v1/fit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BODIES.fit),
  });
  await after.arrayBuffer();
  if (after.status !== 503) break;
  await new Promise((r) => setTimeout(r, 1000 * Number(after.headers.get('retry-after') ?? 1)));
}
const live = await fetch(`${compactor.base}/health/live`);
const abandoned = await metric(compactor.base, 'compactor_queue_abandoned_total');
console.log(
  `afterwards: /v1/fit ${after.status} after ${fmt((performance.now() - shedAt) / 1000, 1)} s of retrying as retry-after says, /health/live ${live.status} (the same process, no restart); requests whose client left while queued, not run: ${abandoned}`,
);
console.log(`\nPeak RSS: compactor ${fmt(peakRssMiB(compactor.pid))} MiB, floor ${fmt(peakRssMiB(floor.pid))} MiB`);
console.log(`Fake LLM calls: ${llm.requests.length} (the fit body is summarized once, then served from the summary cache)`);
await compactor.stop();
await floor.stop();
await llm.stop();
