/**
 * A process's own CPU time, read from outside it: the sum over its threads of the time each spent
 * on a CPU (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds; Linux). Unlike wall-clock figures it
 * holds on a busy machine, where requests per second swing with what else runs. Threads that
 * exited are not counted (the servers' threads live as long as the process).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of every live thread of `pid`, in ms. */
export function cpuMs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return ns / 1e6;
}

/** The machine's 1-minute load average. */
export function loadAverage() {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

/**
 * CPU per request of `server` (ms): `amount` POSTs of `body` to `url` over `connections`
 * connections (autocannon), the server's CPU time before and after divided by the requests
 * answered 2xx (a shed request's CPU is counted, not the request: conservative); `non2xx` says how
 * many were not. Throws on connection errors.
 */
export async function cpuPerRequest(autocannon, server, url, body, amount, connections) {
  const before = cpuMs(server.pid);
  const result = await new Promise((resolve, reject) =>
    autocannon({ url, method: 'POST', connections, amount, headers: { 'content-type': 'application/json' }, body }, (error, r) =>
      error ? reject(error) : resolve(r),
    ),
  );
  const spent = cpuMs(server.pid) - before;
  if (result.errors > 0 || result['2xx'] === 0) throw new Error(`${url}: ${result.errors} errors, ${result['2xx']} answered 2xx`);
  return { ms: spent / result['2xx'], non2xx: result.non2xx };
}
