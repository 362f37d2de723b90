/** Child-process servers for the HTTP benchmarks: start, wait until live, read peak RSS, stop. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BODY_LIMIT = 32 * 1024 * 1024;

/** A port that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node <script>` with PORT set and waits until GET /health/live answers.
 * @param {'compactor'|'floor'} kind
 * @param {{ env?: Record<string, string>, nodeArgs?: string[] }} [options] extra environment
 *   (e.g. COMPACTOR_STORE_URL) and node flags (e.g. --cpu-prof) for this process
 */
export async function startServer(kind, { env = {}, nodeArgs = [] } = {}) {
  const port = await freePort();
  const script = kind === 'compactor' ? `${ROOT}dist/server.js` : `${ROOT}bench/lib/floor-server.mjs`;
  const child = spawn(process.execPath, [...nodeArgs, script], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      COMPACTOR_BODY_LIMIT: String(BODY_LIMIT),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  for (;;) {
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 20))]);
    if (code !== undefined) throw new Error(`${kind} server exited with ${code} before listening: ${stderr}`);
    try {
      const res = await fetch(`${base}/health/live`);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    const limit = Number(process.env.BENCH_START_MS ?? 20_000);
    if (performance.now() - started > limit) throw new Error(`${kind} server did not start in ${limit} ms: ${stderr}`);
  }
  return {
    kind,
    pid: child.pid,
    base,
    url: kind === 'compactor' ? `${base}/v1/window` : `${base}/echo`,
    startMs: performance.now() - started,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Peak resident set size (VmHWM) of a live process, in MiB. */
export function peakRssMiB(pid) {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Current resident set size (VmRSS) of a live process, in MiB. */
export function rssMiB(pid) {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/**
 * POSTs a prepared JSON body and reads the whole response. The time covers sending the body
 * and reading every byte of the answer.
 */
export async function timedPost(url, body) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const buf = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}: ${Buffer.from(buf).toString('utf8').slice(0, 500)}`);
  return { ms, bytes: buf.byteLength, buf };
}

/** A counter from the Compactor's /metrics (Prometheus text). */
export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}
