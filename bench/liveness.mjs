import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateHistory } from './lib/generate.mjs';
import { runMeta } from './lib/meta.mjs';
import { startProber } from './lib/prober.mjs';
import { peakRssMiB, startServer } from './lib/servers.mjs';
import { fmt, max, median } from './lib/stats.mjs';

const RUNS = Number(process.argv[2] ?? 3);

/** A history of about `bytes` bytes: generated pairs, repeated with distinct call ids and text. */
function history(bytes) {
  const base = generateHistory({ pairs: 999, scale: 0.455 });
  const out = [base[0], base[1]];
  for (let r = 0; JSON.stringify(out).length < bytes; r++) {
    for (const m of base.slice(2)) {
      out.push(
        r === 0
          ? m
          : JSON.parse(
              JSON.stringify(m)
                .replaceAll('"call_', `"c${r}_`)
                .replaceAll(' the ', ` the${r % 7} `),
            ),
      );
    }
  }
  while (JSON.stringify(out).length > bytes) out.splice(out.length - 2, 2);
  return out;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function post(url, body) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

const bodies = {
  '20 MB': history(20e6),
  '31.5 MB': history(31.5e6),
};
const payload = (endpoint, messages) =>
  JSON.stringify(
    endpoint === 'fit'
      ? { model: 'gpt-4o', messages, target_tokens: 100_000 }
      : { model: 'gpt-4o', messages, keep_tool_uses: 20 },
  );

const meta = runMeta();
console.log(`# liveness under large requests (${RUNS} runs each) ${JSON.stringify(meta)}`);
for (const mode of [
  { name: 'main thread (COMPACTOR_WORKERS=0)', env: { COMPACTOR_WORKERS: '0' } },
  { name: 'worker pool (default)', env: {} },
]) {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-live-'));
  const server = await startServer('compactor', {
    env: { COMPACTOR_STORE_URL: `sqlite:${join(dir, 'c.db')}`, LOG_LEVEL: 'warn', ...mode.env },
  });
  console.log(`\n## ${mode.name}\n`);
  console.log('| request | runs | request ms (median) | live p50 ms | live p99 ms | live max ms (max over runs) |');
  console.log('|---|---|---|---|---|---|');
  for (const endpoint of ['fit', 'compact']) {
    for (const [size, messages] of Object.entries(bodies)) {
      const body = payload(endpoint, messages);
      const ms = [];
      const p50 = [];
      const p99 = [];
      const worst = [];
      for (let r = 0; r < RUNS; r++) {
        const prober = startProber(server.base);
        await new Promise((res) => setTimeout(res, 100));
        const answer = await post(`${server.base}/v1/${endpoint}`, body);
        const lat = await prober.stop();
        if (answer.status !== 200) throw new Error(`${endpoint} ${size}: HTTP ${answer.status}`);
        ms.push(answer.ms);
        p50.push(pct(lat, 50));
        p99.push(pct(lat, 99));
        worst.push(max(lat));
      }
      console.log(
        `| ${endpoint} ${size} | ${RUNS} | ${fmt(median(ms), 0)} | ${fmt(median(p50))} | ${fmt(median(p99))} | ${fmt(max(worst))} |`,
      );
    }
  }
  console.log('\n| parallel 20 MB compactions | 200 | 503 | wall s | peak RSS MiB |');
  console.log('|---|---|---|---|---|');
  for (const n of [8, 50]) {
    const body = payload('compact', bodies['20 MB']);
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: n }, () => post(`${server.base}/v1/compact`, body)));
    const ok = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 503).length;
    console.log(`| ${n} | ${ok} | ${refused} | ${fmt((performance.now() - t0) / 1000)} | ${fmt(peakRssMiB(server.pid), 0)} |`);
  }
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
