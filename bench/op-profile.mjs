// In-process CPU per call of one operation as a worker thread performs it (parse the body bytes,
// check, run with the caller's prepared summaries, serialize the answer), a fresh body each call,
// on the load benchmark's body, with the summarizer the load benchmark uses (an LLM: a fake
// answering in 20 ms) and an SQLite store (diagnostic for issue 40). Prints the best block of 10
// calls and the median call (contention on a busy machine only adds to them).
// Run: npm run build && node bench/op-profile.mjs [fit|compact|window] [calls=100] [grow|same] [profile.cpuprofile]
//   grow: each call the history up to 2 messages more (a growing conversation, no warm-up);
//   a file name: the measured calls' CPU profile (after the warm-up) is written there;
//   ALLOC_PROFILE=<file>: a sampling allocation profile (objects collected by GC included);
//   DIST=<folder>: another build's dist/ (to compare two builds on one machine).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';

const DIST = process.env.DIST ?? '../dist';
const { loadConfig } = await import(`${DIST}/config.js`);
const { createCompactor } = await import(`${DIST}/service/create.js`);
const { OPERATIONS } = await import(`${DIST}/service/operations.js`);
const requestBody = await import(`${DIST}/service/request-body.js`);
// As the worker of that build parses the bytes it receives and serializes its answer (a build
// before issue 40's: decoded as UTF-8, then parsed; zod's serializer).
const parseBytes = requestBody.parseJsonBytes ?? ((bytes) => requestBody.parseJsonBody(bytes.toString('utf8'), bytes));
const encodeModule = await import(`${DIST}/schemas/encode.js`).catch(() => undefined);
const { openStore } = await import(`${DIST}/store/index.js`);
const { Preparer } = await import(`${DIST}/service/prepare.js`);

const [kind = 'fit', calls = '100', growArg, profile] = process.argv.slice(2);
const grow = growArg === 'grow';
const N = Number(calls);
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const BODIES = {
  window: (m) => ({ messages: m, keep: { messages: 40 }, model: 'gpt-4o' }),
  compact: (m) => ({ messages: m, keep_tool_uses: 3, model: 'gpt-4o' }),
  fit: (m) => ({ messages: m, target_tokens: 12_000, model: 'gpt-4o' }),
};
const texts = grow
  ? Array.from({ length: N }, (_, i) => JSON.stringify(BODIES[kind](messages.slice(0, messages.length - 2 * (N - 1 - i)))))
  : [JSON.stringify(BODIES[kind](messages))];
const DB = `/tmp/op-profile-${process.pid}.db`;
// The summarizer the load benchmark runs with: an LLM (a fake answering in 20 ms), its summaries cached after the first.
const llm = await startFakeLlm({ delayMs: 20 });
const config = loadConfig({
  ...process.env,
  OPENAI_BASE_URL: llm.url,
  COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
  COMPACTOR_STORE_URL: `sqlite:${DB}`,
  LOG_LEVEL: 'warn',
});
const store = await openStore(config.COMPACTOR_STORE_URL, { maxBytes: config.COMPACTOR_STORE_MAX_BYTES, keyPrefix: 'p:' });
const logger = {
  info() {},
  warn() {},
  error() {},
  debug() {},
  child() {
    return logger;
  },
};
const core = await createCompactor(config, { store, secret: 'x'.repeat(32), logger });
const op = OPERATIONS[`/v1/${kind}`];
// Prepared summaries as the service runs them with an LLM summarizer (on by default).
const preparer = new Preparer(core, { concurrency: 4, byDefault: true, maxQueued: 16, maxQueuedBytes: 48 << 20, onEvent() {} });
const serialize = (encodeModule?.fastSerializerCompiler ?? serializerCompiler)({
  schema: op.response,
  method: 'POST',
  url: op.url,
});
const bodies = new Map();
async function once(text) {
  // As a worker receives it: the bytes (which tag the history's messages).
  if (!bodies.has(text)) bodies.set(text, Buffer.from(text));
  const body = parseBytes(bodies.get(text));
  const input = op.check(body);
  const caller = core.caller(null);
  const outcome = await op.around(preparer, caller.scope, input, (prepared) =>
    op.run(core, input, { signal: AbortSignal.timeout(60_000), caller, prepared }),
  );
  return Buffer.from(serialize(outcome.value), 'utf8').byteLength;
}
if (!grow) {
  // Warm, and (fit) let the prepared summary the first call asks for be made: the steady state splices it.
  for (let i = 0; i < 10; i++) await once(texts[0]);
  await new Promise((r) => setTimeout(r, 3000));
  for (let i = 0; i < 10; i++) await once(texts[0]);
}
const session = new Session();
const ALLOC = process.env.ALLOC_PROFILE;
if (ALLOC) {
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}
if (profile) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
}
const u0 = process.cpuUsage();
const t0 = performance.now();
const per = [];
for (let i = 0; i < N; i++) {
  const c0 = process.cpuUsage();
  await once(texts[grow ? i : 0]);
  const c = process.cpuUsage(c0);
  per.push((c.user + c.system) / 1000);
}
const u = process.cpuUsage(u0);
// The best block of 10 calls: contention on a busy machine only adds to a block.
const blocks = [];
for (let i = 0; i + 10 <= per.length; i += 10) blocks.push(per.slice(i, i + 10).reduce((a, b) => a + b, 0) / 10);
const sorted = [...per].sort((a, b) => a - b);
console.log(
  `${kind}${grow ? ' (growing)' : ''}: best block ${Math.min(...blocks).toFixed(2)} ms, median ${sorted[per.length >> 1].toFixed(2)} ms; ${((u.user + u.system) / 1000 / N).toFixed(2)} ms CPU per call, ${((performance.now() - t0) / N).toFixed(2)} ms wall; first 10 ${per
    .slice(0, 10)
    .reduce((a, b) => a + b, 0)
    .toFixed(0)} ms, last 10 ${per
    .slice(-10)
    .reduce((a, b) => a + b, 0)
    .toFixed(0)} ms`,
);
if (ALLOC) writeFileSync(ALLOC, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
if (profile) writeFileSync(profile, JSON.stringify((await session.post('Profiler.stop')).profile));
await preparer.close(0);
await store.close?.();
await llm.stop();
for (const suffix of ['', '-wal', '-shm']) rmSync(`${DB}${suffix}`, { force: true });
