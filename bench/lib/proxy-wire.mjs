/**
 * The client side of bench/proxy.mjs: one request timed to its first and last body byte (undici,
 * one keep-alive pool for both targets, so a proxied and a straight request pay the same client
 * costs), an optional throttle (a slow consumer: backpressure all the way to the provider), and
 * percentiles.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

export const agent = new Agent({ keepAliveTimeout: 30_000, connections: 4, headersTimeout: 0, bodyTimeout: 0 });

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * POSTs `body` (a Buffer) and reads the answer to its end: milliseconds to the headers, to the
 * first body byte and to the last, the bytes read, the status and the `x-compactor` header.
 * `throttle` (MB/s) sleeps while reading so that the client consumes no faster than that.
 */
export async function timed(url, headers, body, { throttle = 0 } = {}) {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
  const headersAt = performance.now() - t0;
  let first;
  let bytes = 0;
  let owed = 0;
  for await (const chunk of res.body) {
    first ??= performance.now() - t0;
    bytes += chunk.length;
    if (throttle > 0) {
      owed += chunk.length;
      if (owed >= 1 << 20) {
        await sleep((owed / (throttle * 1e6)) * 1000);
        owed = 0;
      }
    }
  }
  const last = performance.now() - t0;
  const compactor = res.headers['x-compactor'];
  if (res.statusCode !== 200) throw new Error(`${url}: HTTP ${res.statusCode} (${compactor ?? 'no x-compactor'})`);
  return { headersAt, first: first ?? last, last, bytes, status: res.statusCode, compactor };
}

/** The q-quantile (0..1) of numbers, nearest rank. */
export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** CPU milliseconds (user + system) a process has used so far, from /proc (Linux clock ticks of 10 ms). */
export function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
