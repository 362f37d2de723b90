/**
 * What a run of large fits leaves behind (issue 39 #10): 40 sequential fits of a ~1.9 MiB history
 * (a different one each) with a slow summarizer (RETENTION_DELAY_MS, default 3000: prepared
 * summaries queue up behind it), then, with nothing in flight and the prepared-summary queue
 * drained, RSS and the heap as the server's own /metrics reports them, sampled for a while.
 * Memory store; the defaults otherwise (one worker thread).
 *
 * Usage: npm run build && node bench/retention.mjs
 */

import { startFakeLlm, summarizerEnv } from './lib/fake-llm.mjs';
import { generateHistory } from './lib/generate.mjs';
import { metric, peakRssMiB, rssMiB, startServer } from './lib/servers.mjs';

const FITS = Number(process.env.RETENTION_FITS ?? 40);
const fake = await startFakeLlm({ delayMs: Number(process.env.RETENTION_DELAY_MS ?? 3000) });
const server = await startServer('compactor', {
  env: { ...summarizerEnv(fake, { keys: ['bench-key-0123456789'], secret: 's'.repeat(40) }), COMPACTOR_STORE_URL: 'memory:' },
});
const auth = { authorization: 'Bearer bench-key-0123456789', 'content-type': 'application/json' };
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(0);
const heap = async () =>
  `heap used ${mib(await metric(server.base, 'nodejs_heap_size_used_bytes'))} MiB of ${mib(await metric(server.base, 'nodejs_heap_size_total_bytes'))}, external ${mib(await metric(server.base, 'nodejs_external_memory_bytes'))}`;
try {
  for (let i = 0; i < 600 && (await fetch(`${server.base}/health/ready`)).status !== 200; i++)
    await new Promise((r) => setTimeout(r, 100));
  const idle = rssMiB(server.pid);
  console.log(`idle: RSS ${idle.toFixed(0)} MiB, ${await heap()}`);
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
    `after ${FITS} fits of ${(bytes / 1024 / 1024).toFixed(2)} MiB: RSS ${rssMiB(server.pid).toFixed(0)} MiB, peak ${peakRssMiB(server.pid).toFixed(0)}, ${await heap()}`,
  );
  // Until the prepared summaries queued behind the slow summarizer have run (or a deadline).
  for (let i = 0; i < 120; i++) {
    const made = (await metric(server.base, 'compactor_prepared_total')) || 0;
    await new Promise((r) => setTimeout(r, 1000));
    if (i % 10 === 0)
      console.log(
        `+${i} s: RSS ${rssMiB(server.pid).toFixed(0)} MiB, ${await heap()}, prepared events ${made}, summarizer calls ${fake.requests?.length ?? '?'}`,
      );
  }
  console.log(`settled: RSS ${rssMiB(server.pid).toFixed(0)} MiB (idle ${idle.toFixed(0)}), ${await heap()}`);
} finally {
  await server.stop();
  await fake.stop?.();
}
