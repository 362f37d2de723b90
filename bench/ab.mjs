// Two builds of the service's core in one process, their calls interleaved one by one on the load
// benchmark's body (a fresh parse each call), so that whatever else the machine does falls on both
// alike: CPU per call of each (process.cpuUsage around the call), medians and their ratio
// (diagnostic for issue 40: comparing a change on a busy machine).
// Run: npm run build && node bench/ab.mjs <distA> <distB> [fit|compact|window] [calls=200]
import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';

const [distA, distB, kind = 'fit', calls = '200'] = process.argv.slice(2);
const N = Number(calls);
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const BODIES = {
  window: { messages, keep: { messages: 40 }, model: 'gpt-4o' },
  compact: { messages, keep_tool_uses: 3, model: 'gpt-4o' },
  fit: { messages, target_tokens: 12_000, model: 'gpt-4o' },
};
const text = JSON.stringify(BODIES[kind]);
const llm = await startFakeLlm({ delayMs: 20 });
const logger = { info() {}, warn() {}, error() {}, debug() {}, child: () => logger };

async function build(dist, tag) {
  const url = (p) => `file://${resolve(dist)}/${p}`;
  const { loadConfig } = await import(url('config.js'));
  const { createCompactor } = await import(url('service/create.js'));
  const { OPERATIONS } = await import(url('service/operations.js'));
  const requestBody = await import(url('service/request-body.js'));
  const parse = requestBody.parseJsonBytes ?? ((b) => requestBody.parseJsonBody(b.toString('utf8'), b));
  const { openStore } = await import(url('store/index.js'));
  const { Preparer } = await import(url('service/prepare.js'));
  const db = `/tmp/ab-${process.pid}-${tag}.db`;
  const config = loadConfig({
    ...process.env,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_STORE_URL: `sqlite:${db}`,
    LOG_LEVEL: 'warn',
  });
  const store = await openStore(config.COMPACTOR_STORE_URL, { maxBytes: config.COMPACTOR_STORE_MAX_BYTES, keyPrefix: 'p:' });
  const core = await createCompactor(config, { store, secret: 'x'.repeat(32), logger });
  const op = OPERATIONS[`/v1/${kind}`];
  const preparer = new Preparer(core, { concurrency: 4, byDefault: true, maxQueued: 16, maxQueuedBytes: 48 << 20, onEvent() {} });
  const serialize = serializerCompiler({ schema: op.response, method: 'POST', url: op.url });
  const bytes = Buffer.from(text);
  const once = async () => {
    const body = parse(bytes);
    const input = op.check(body);
    const caller = core.caller(null);
    const outcome = await op.around(preparer, caller.scope, input, (prepared) =>
      op.run(core, input, { signal: AbortSignal.timeout(60_000), caller, prepared }),
    );
    return serialize(outcome.value);
  };
  const close = async () => {
    await preparer.close(0);
    await store.close?.();
    for (const s of ['', '-wal', '-shm']) rmSync(`${db}${s}`, { force: true });
  };
  return { once, close };
}

const a = await build(distA, 'a');
const b = await build(distB, 'b');
for (let i = 0; i < 10; i++) {
  await a.once();
  await b.once();
}
await new Promise((r) => setTimeout(r, 3000));
const outA = await a.once();
const outB = await b.once();
const per = { a: [], b: [] };
for (let i = 0; i < N; i++) {
  for (const [k, s] of i % 2
    ? [
        ['a', a],
        ['b', b],
      ]
    : [
        ['b', b],
        ['a', a],
      ]) {
    const c0 = process.cpuUsage();
    await s.once();
    const c = process.cpuUsage(c0);
    per[k].push((c.user + c.system) / 1000);
  }
}
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
const q1 = (x) => [...x].sort((p, q) => p - q)[x.length >> 2];
console.log(
  `${kind}: A median ${med(per.a).toFixed(2)} ms (q1 ${q1(per.a).toFixed(2)}), B median ${med(per.b).toFixed(2)} ms (q1 ${q1(per.b).toFixed(2)}); B/A ${(med(per.b) / med(per.a)).toFixed(3)}; answers ${outA === outB ? 'identical' : 'DIFFER'}`,
);
await a.close();
await b.close();
await llm.stop();
