import type { MessagePort } from 'node:worker_threads';
import type { PreparedContext } from '../strategies/types.js';

type Settled = NonNullable<PreparedContext['settled']>;
interface SettledRequest {
  n: number;
  id: string;
  ms: number;
}
interface SettledReply {
  n: number;
  ready: boolean;
}

/**
 * The main thread's end of a worker task's `settled` channel: the preparer lives here, so a fit
 * run on a worker thread waits on the same settle signal as one run in line. A wait ends with the
 * task (its port closes).
 */
export function serveSettled(port: MessagePort, settled: Settled): void {
  const closed = new AbortController();
  port.on('close', () => closed.abort());
  port.on('message', ({ n, id, ms }: SettledRequest) => {
    const reply = (ready: boolean) => port.postMessage({ n, ready } satisfies SettledReply);
    settled(id, ms, closed.signal).then(reply, () => reply(false));
  });
}

/** The worker's `settled`: a request over the task's port; its own `ms` and `signal` bound it too. */
export function settledOver(port: MessagePort): Settled {
  let next = 0;
  const pending = new Map<number, (ready: boolean) => void>();
  port.on('message', ({ n, ready }: SettledReply) => pending.get(n)?.(ready));
  return (id, ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      const n = next++;
      const done = (ready: boolean) => {
        pending.delete(n);
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        resolve(ready);
      };
      const abort = () => done(false);
      const timer = setTimeout(abort, ms);
      pending.set(n, done);
      signal?.addEventListener('abort', abort, { once: true });
      port.postMessage({ n, id, ms } satisfies SettledRequest);
    });
}
