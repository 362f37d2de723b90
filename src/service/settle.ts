import { EventEmitter } from 'node:events';
import type { MessagePort } from 'node:worker_threads';
import type { PreparedContext } from '../strategies/types.js';

/** Where a preparer signals that a range settled: event `key`, with whether its summary is ready. */
export function settleSignals(): EventEmitter {
  return new EventEmitter().setMaxListeners(0);
}

/**
 * Waits for event `key` on `signals` (true: ready), false after `ms` or once `signal` aborts. It
 * listens before `now` reads the current state (true/false when settled already, undefined while
 * pending), so a settle between the two is not missed.
 */
export function settledBy(
  signals: EventEmitter,
  key: string,
  ms: number,
  signal: AbortSignal | undefined,
  now: () => Promise<boolean | undefined>,
): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve(false);
    const done = (ready: boolean) => {
      clearTimeout(timer);
      signals.off(key, done);
      signal?.removeEventListener('abort', abort);
      resolve(ready);
    };
    const abort = () => done(false);
    const timer = setTimeout(abort, ms);
    signals.on(key, done);
    signal?.addEventListener('abort', abort, { once: true });
    now().then(
      (ready) => ready !== undefined && done(ready),
      () => {},
    );
  });
}

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

/** The worker's `settled`: a request over the task's port, bounded by its own `ms` and `signal` too. */
export function settledOver(port: MessagePort): Settled {
  let next = 0;
  const replies = settleSignals();
  port.on('message', ({ n, ready }: SettledReply) => replies.emit(String(n), ready));
  return (id, ms, signal) => {
    const n = next++;
    return settledBy(replies, String(n), ms, signal, async () => {
      port.postMessage({ n, id, ms } satisfies SettledRequest);
      return undefined;
    });
  };
}
