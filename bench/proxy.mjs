/**
 * Proxy benchmark (issue 31): Compactor as a drop-in base URL, side by side in one run with the
 * same requests sent straight to the provider. The provider is the repository's fake
 * (test/support/fake-provider.ts) in a process of its own (bench/lib/fake-provider-child.mjs); the
 * proxy is `node dist/server.js` as a child (store `memory:`, its upstreams the fake), so each
 * process's CPU and memory are its own.
 *
 *  1. Time to first byte. A Claude Code-shaped Anthropic streaming request of about 100 KB
 *     (bench/lib/proxy-bodies.mjs: our own texts) is sent PROXYBENCH_REQUESTS times per run, one at
 *     a time, rotating among three targets: straight to the fake; through the proxy with
 *     `x-compactor-bypass: 1` (the proxy's own cost: read, forward, stream back, no reduction);
 *     through the proxy (the conversation found, fit's decision, then the same). TTFB is from
 *     sending the request to the first byte of the answer's body. Per run: p50 and p99 of each,
 *     and what the proxy adds (proxy − straight); the table gives the medians over runs. Fit's own
 *     time is the reduction path less the bypass.
 *  2. A streamed answer's throughput: a 20 MB Anthropic SSE answer (the fake's `LargeText`,
 *     16 KB text deltas), read as fast as the client can, straight, through the proxy (its usage
 *     read from a copy) and through it with `x-compactor-bypass: 1` (no usage read), in rotating
 *     order, PROXYBENCH_STREAM_RUNS times: MB/s of body and the proxy process's CPU ms per MiB
 *     (/proc), medians, the ratios. Then the proxy's peak RSS (VmHWM) streaming a 20 MB, a 200 MB
 *     and a 1000 MB answer, each in a fresh proxy process, to a client reading at
 *     PROXYBENCH_SLOW_MBPS (a slow consumer: backpressure reaches the provider), against that
 *     process's RSS when idle.
 *  3. The corpus replayed through the proxy (bench/lib/proxy-replay.mjs; PROXYBENCH_PARTS).
 *
 * Goals (the issue's): TTFB added under 5 ms plus fit's own time; throughput ≥ 0.95× straight;
 * peak RSS flat in the answer's size; the replay's bill within 1% of fit used directly with the
 * agent keeping fit's history, and prefix breaks no more than reductions.
 *
 * Usage: npm run build && node bench/proxy.mjs
 * Env: PROXYBENCH_PARTS (ttfb,stream,replay), PROXYBENCH_RUNS (5), PROXYBENCH_REQUESTS (300),
 *      PROXYBENCH_BODY_BYTES (100000), PROXYBENCH_STREAM_MB (20), PROXYBENCH_BIG_MB (200),
 *      PROXYBENCH_HUGE_MB (1000), PROXYBENCH_STREAM_RUNS (7), PROXYBENCH_SLOW_MBPS (100),
 *      PROXYBENCH_OUT (JSON path; default bench/out/proxy-<commit>.json), and bench/lib/proxy-replay.mjs's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startFakeProvider } from './lib/fake-provider-child.mjs';
import { loadavg, runMeta } from './lib/meta.mjs';
import { claudeCodeRequest } from './lib/proxy-bodies.mjs';
import { replayCorpus, replayTable } from './lib/proxy-replay.mjs';
import { agent, cpuMs, quantile, timed } from './lib/proxy-wire.mjs';
import { metric, peakRssMiB, rssMiB, startServer } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);
const env = (name, fallback) => Number(process.env[name] ?? fallback);

const PARTS = (process.env.PROXYBENCH_PARTS ?? 'ttfb,stream,replay').split(',');
const RUNS = env('PROXYBENCH_RUNS', 5);
const REQUESTS = env('PROXYBENCH_REQUESTS', 300);
const BODY_BYTES = env('PROXYBENCH_BODY_BYTES', 100_000);
const STREAM_MB = env('PROXYBENCH_STREAM_MB', 20);
const BIG_MB = env('PROXYBENCH_BIG_MB', 200);
const HUGE_MB = env('PROXYBENCH_HUGE_MB', 1000);
const STREAM_RUNS = env('PROXYBENCH_STREAM_RUNS', 7);
const SLOW_MBPS = env('PROXYBENCH_SLOW_MBPS', 100);
const MB = 1024 * 1024;

/** A proxy child in front of the fake (every provider's upstream), with `extra` environment. */
const startProxy = (fake, extra = {}) =>
  startServer('compactor', {
    env: {
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_UPSTREAM_GEMINI: fake.url,
      LOG_LEVEL: 'warn',
      ...extra,
    },
  });

async function ttfbPart(fake) {
  const proxy = await startProxy(fake);
  const { body, headers } = claudeCodeRequest({ bytes: BODY_BYTES });
  const bytes = Buffer.from(JSON.stringify(body));
  const targets = {
    straight: [`${fake.url}/v1/messages`, headers],
    bypass: [`${proxy.base}/anthropic/v1/messages`, { ...headers, 'x-compactor-bypass': '1' }],
    proxy: [`${proxy.base}/anthropic/v1/messages`, headers],
  };
  const names = Object.keys(targets);
  const runs = [];
  const actions = {};
  for (let r = 0; r < RUNS; r++) {
    const ms = Object.fromEntries(names.map((n) => [n, []]));
    for (let i = -20; i < REQUESTS; i++) {
      // Rotating order: no target always goes first after the others.
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + r + j + names.length * 100) % names.length];
        const [url, h] = targets[name];
        const res = await timed(url, h, bytes);
        if (i < 0) continue;
        ms[name].push(res.first);
        if (name === 'proxy') actions[res.compactor] = (actions[res.compactor] ?? 0) + 1;
      }
    }
    await fake.forget();
    const q = (name, p) => quantile(ms[name], p);
    const run = {};
    for (const n of names) run[n] = { p50: q(n, 0.5), p99: q(n, 0.99) };
    for (const n of ['bypass', 'proxy'])
      run[`${n}_added`] = { p50: run[n].p50 - run.straight.p50, p99: run[n].p99 - run.straight.p99 };
    run.fit = { p50: run.proxy.p50 - run.bypass.p50, p99: run.proxy.p99 - run.bypass.p99 };
    runs.push(run);
    log(
      `ttfb run ${r + 1}/${RUNS}: p50 straight ${fmt(run.straight.p50, 2)} bypass ${fmt(run.bypass.p50, 2)} proxy ${fmt(run.proxy.p50, 2)} ms`,
    );
  }
  const peak = peakRssMiB(proxy.pid);
  await proxy.stop();
  const med = (key, p) => median(runs.map((x) => x[key][p]));
  const rows = ['straight', 'bypass', 'proxy', 'bypass_added', 'proxy_added', 'fit'].map((key) => ({
    key,
    p50: med(key, 'p50'),
    p99: med(key, 'p99'),
  }));
  return { body_bytes: bytes.length, requests: REQUESTS, runs, rows, actions, proxy_peak_rss_mib: peak };
}

async function streamPart(fake) {
  const proxy = await startProxy(fake);
  const { headers } = claudeCodeRequest({ bytes: 0 });
  const small = Buffer.from(
    JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 32_000,
      stream: true,
      messages: [{ role: 'user', content: 'Print it.' }],
    }),
  );
  const big = { ...headers, 'x-bench-bytes': String(STREAM_MB * MB) };
  const targets = {
    straight: [`${fake.url}/v1/messages`, big],
    proxy: [`${proxy.base}/anthropic/v1/messages`, big],
    bypass: [`${proxy.base}/anthropic/v1/messages`, { ...big, 'x-compactor-bypass': '1' }],
  };
  const names = Object.keys(targets);
  const mbps = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = { proxy: [], bypass: [] };
  for (let r = 0; r < STREAM_RUNS + 1; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(r + j) % names.length];
      const before = cpuMs(proxy.pid);
      const res = await timed(targets[name][0], targets[name][1], small);
      // The first round warms every path up.
      if (r === 0) continue;
      mbps[name].push(res.bytes / MB / (res.last / 1000));
      if (name !== 'straight') cpu[name].push((cpuMs(proxy.pid) - before) / (res.bytes / MB));
    }
    await fake.forget();
  }
  const usageRead = await metric(proxy.base, 'compactor_proxy_usage_read_total');
  await proxy.stop();
  const throughput = {
    answer_mib: STREAM_MB,
    straight_mibps: median(mbps.straight),
    proxy_mibps: median(mbps.proxy),
    bypass_mibps: median(mbps.bypass),
    ratio: median(mbps.proxy) / median(mbps.straight),
    bypass_ratio: median(mbps.bypass) / median(mbps.straight),
    proxy_cpu_ms_per_mib: median(cpu.proxy),
    bypass_cpu_ms_per_mib: median(cpu.bypass),
    runs: mbps,
    usage_read: usageRead,
  };
  log(`throughput: straight ${fmt(throughput.straight_mibps)} MiB/s, proxy ${fmt(throughput.proxy_mibps)} MiB/s`);
  const memory = [];
  for (const mib of [STREAM_MB, BIG_MB, HUGE_MB]) {
    const p = await startProxy(fake);
    // One small call first: the idle figure is of a proxy that has served (its code paths loaded).
    await timed(`${p.base}/anthropic/v1/messages`, headers, small);
    const idle = { rss: rssMiB(p.pid), peak: peakRssMiB(p.pid) };
    const res = await timed(`${p.base}/anthropic/v1/messages`, { ...headers, 'x-bench-bytes': String(mib * MB) }, small, {
      throttle: SLOW_MBPS,
    });
    memory.push({
      answer_mib: mib,
      idle_rss_mib: idle.rss,
      idle_peak_mib: idle.peak,
      peak_rss_mib: peakRssMiB(p.pid),
      read_mib: res.bytes / MB,
    });
    log(`peak RSS streaming ${mib} MiB at ${SLOW_MBPS} MB/s: ${fmt(peakRssMiB(p.pid))} MiB (idle ${fmt(idle.rss)})`);
    await p.stop();
    await fake.forget();
  }
  return { throughput, memory, slow_mbps: SLOW_MBPS };
}

function report(meta, ttfb, stream, replay) {
  const out = [
    `commit ${meta.commit}${meta.src_dirty ? ' (src dirty)' : ''}, ${meta.date}, Node ${meta.node}, ${meta.nproc} cores`,
  ];
  if (ttfb) {
    out.push(
      '',
      `TTFB, ${ttfb.body_bytes} B Claude Code-shaped request, ${ttfb.requests} requests per target per run, medians of ${RUNS} runs (ms):`,
    );
    out.push('', '| target | p50 | p99 |', '| --- | ---: | ---: |');
    for (const r of ttfb.rows) out.push(`| ${r.key} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} |`);
    out.push('', `proxy answers: ${JSON.stringify(ttfb.actions)}; proxy peak RSS ${fmt(ttfb.proxy_peak_rss_mib)} MiB`);
  }
  if (stream) {
    const t = stream.throughput;
    out.push(
      '',
      `Throughput, ${t.answer_mib} MiB streamed answer, medians of ${STREAM_RUNS}: straight ${fmt(t.straight_mibps)} MiB/s, proxy ${fmt(t.proxy_mibps)} MiB/s (ratio ${fmt(t.ratio, 3)}, proxy CPU ${fmt(t.proxy_cpu_ms_per_mib, 2)} ms/MiB), proxy with x-compactor-bypass ${fmt(t.bypass_mibps)} MiB/s (ratio ${fmt(t.bypass_ratio, 3)}, ${fmt(t.bypass_cpu_ms_per_mib, 2)} ms/MiB); answers whose usage was read: ${t.usage_read}`,
    );
    out.push('', `| answer | idle RSS | peak RSS (client at ${stream.slow_mbps} MB/s) |`, '| ---: | ---: | ---: |');
    for (const m of stream.memory) out.push(`| ${m.answer_mib} MiB | ${fmt(m.idle_rss_mib)} MiB | ${fmt(m.peak_rss_mib)} MiB |`);
  }
  if (replay) out.push('', ...replayTable(replay));
  return out.join('\n');
}

async function main() {
  const meta = runMeta();
  log(`proxy benchmark at ${meta.commit}: ${PARTS.join(', ')}`);
  const fake = await startFakeProvider();
  try {
    const ttfb = PARTS.includes('ttfb') ? await ttfbPart(fake) : undefined;
    const stream = PARTS.includes('stream') ? await streamPart(fake) : undefined;
    const replay = PARTS.includes('replay') ? await replayCorpus({ fake, startProxy, log }) : undefined;
    meta.loadavg_end = loadavg();
    const path = process.env.PROXYBENCH_OUT ?? `${ROOT}bench/out/proxy-${meta.commit}.json`;
    mkdirSync(`${ROOT}bench/out`, { recursive: true });
    writeFileSync(path, `${JSON.stringify({ meta, ttfb, stream, replay }, null, 1)}\n`);
    console.log(report(meta, ttfb, stream, replay));
    log(`raw figures: ${path}`);
  } finally {
    await fake.stop();
    await agent.close();
  }
}

await main();
