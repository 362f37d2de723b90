/**
 * What a run of large fits leaves behind (issue 39 #10): 40 sequential fits of a ~1.9 MiB history
 * (a different one each) with a slow summarizer (RETENTION_DELAY_MS, default 3000: prepared
 * summaries queue up behind it), then, with nothing in flight and the summarizer quiet for 10 s,
 * RSS, the main thread's heap (the server's own /metrics) and the store's content bytes.
 *
 * Environment: RETENTION_FITS (40), RETENTION_DELAY_MS (3000), RETENTION_STORE (`sqlite`, the
 * default kind, in a temporary folder; `memory`: the originals are held in the process, up to
 * COMPACTOR_STORE_MAX_BYTES), RETENTION_WORKERS (the service's default unless set),
 * RETENTION_SNAPSHOT=1 (the server runs with --heapsnapshot-signal; once settled, a heap snapshot of
 * its main thread is taken and its largest kinds of objects printed: with RETENTION_WORKERS=0 that
 * is all the JavaScript the service holds; RETENTION_SNAPSHOT_TO=<file> keeps a copy).
 *
 * Usage: npm run build && node bench/retention.mjs
 */

import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlm, summarizerEnv } from './lib/fake-llm.mjs';
import { generateHistory } from './lib/generate.mjs';
import { runMeta } from './lib/meta.mjs';
import { metric, peakRssMiB, rssMiB, startServer } from './lib/servers.mjs';

const FITS = Number(process.env.RETENTION_FITS ?? 40);
const STORE = process.env.RETENTION_STORE ?? 'sqlite';
const SNAPSHOT = process.env.RETENTION_SNAPSHOT === '1';
const dir = mkdtempSync(join(tmpdir(), 'compactor-retention-'));
const fake = await startFakeLlm({ delayMs: Number(process.env.RETENTION_DELAY_MS ?? 3000) });
const env = {
  ...summarizerEnv(fake, { keys: ['bench-key-0123456789'], secret: 's'.repeat(40) }),
  COMPACTOR_STORE_URL: STORE === 'memory' ? 'memory:' : `sqlite:${join(dir, 'c.db')}`,
  ...(process.env.RETENTION_WORKERS !== undefined ? { COMPACTOR_WORKERS: process.env.RETENTION_WORKERS } : {}),
};
const server = await startServer('compactor', {
  env,
  nodeArgs: SNAPSHOT ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`] : [],
});
const auth = { authorization: 'Bearer bench-key-0123456789', 'content-type': 'application/json' };
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(0);
const state = async () => {
  const m = (name) => metric(server.base, name);
  return `RSS ${rssMiB(server.pid).toFixed(0)} MiB; main heap used ${mib(await m('nodejs_heap_size_used_bytes'))} MiB of ${mib(await m('nodejs_heap_size_total_bytes'))}, external ${mib(await m('nodejs_external_memory_bytes'))}; store content ${mib(await m('compactor_store_bytes'))} MiB; main token cache ${await m('compactor_token_cache_entries')} entries`;
};

/** The largest kinds of objects in a heap snapshot, by self size: `[name, MiB, count]`. */
function largestKinds(file, n = 12) {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  const {
    node_fields: fields,
    node_types: [types],
  } = snap.snapshot.meta;
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const kinds = new Map();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]];
    const name = type === 'object' || type === 'native' ? snap.strings[snap.nodes[i + nameAt]] : `(${type})`;
    const k = kinds.get(name) ?? { size: 0, count: 0 };
    k.size += snap.nodes[i + sizeAt];
    k.count++;
    kinds.set(name, k);
  }
  return [...kinds]
    .sort((a, b) => b[1].size - a[1].size)
    .slice(0, n)
    .map(([name, k]) => [name.slice(0, 60), Number(mib(k.size)), k.count]);
}

console.log(
  `# retention after ${FITS} fits (store ${STORE}, workers ${env.COMPACTOR_WORKERS ?? 'default'}) ${JSON.stringify(runMeta())}`,
);
try {
  for (let i = 0; i < 600 && (await fetch(`${server.base}/health/ready`)).status !== 200; i++)
    await new Promise((r) => setTimeout(r, 100));
  const idle = rssMiB(server.pid);
  console.log(`idle: ${await state()}`);
  let bytes = 0;
  for (let i = 0; i < FITS; i++) {
    const body = JSON.stringify({
      messages: generateHistory({ seed: 1000 + i, pairs: 510 }),
      target_tokens: 20000,
      policy: 'tokens',
    });
    bytes = Buffer.byteLength(body);
    const res = await fetch(`${server.base}/v1/fit`, { method: 'POST', headers: auth, body });
    await res.arrayBuffer();
    if (res.status !== 200) console.log(`fit ${i}: ${res.status}`);
  }
  console.log(
    `after ${FITS} fits of ${(bytes / 1024 / 1024).toFixed(2)} MiB: peak RSS ${peakRssMiB(server.pid).toFixed(0)}; ${await state()}`,
  );
  // Until the summaries queued behind the slow summarizer have run: no new call for 10 s (120 s at most).
  const started = Date.now();
  for (let calls = -1, quietSince = Date.now(); Date.now() - quietSince < 10_000 && Date.now() - started < 120_000; ) {
    await new Promise((r) => setTimeout(r, 1000));
    if (fake.requests.length !== calls) {
      calls = fake.requests.length;
      quietSince = Date.now();
    }
  }
  console.log(
    `settled after ${((Date.now() - started) / 1000).toFixed(0)} s, ${fake.requests.length} summarizer calls in all: ${await state()}`,
  );
  console.log(`RSS left: +${(rssMiB(server.pid) - idle).toFixed(0)} MiB over idle (${idle.toFixed(0)} MiB)`);
  if (SNAPSHOT) {
    process.kill(server.pid, 'SIGUSR2');
    // The snapshot is written on the main thread: once it answers a probe again, the file is whole.
    let file;
    for (let i = 0; i < 600 && !file; i++) {
      await new Promise((r) => setTimeout(r, 500));
      await (await fetch(`${server.base}/health/live`)).arrayBuffer();
      const found = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot'));
      if (found) file = join(dir, found);
    }
    if (process.env.RETENTION_SNAPSHOT_TO) copyFileSync(file, process.env.RETENTION_SNAPSHOT_TO);
    console.log('main thread heap, largest kinds by self size (name, MiB, count):');
    for (const row of largestKinds(file)) console.log(`  ${JSON.stringify(row)}`);
  }
} finally {
  await server.stop();
  await fake.stop?.();
  rmSync(dir, { recursive: true, force: true });
}
