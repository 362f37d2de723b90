import type { MessagePort } from 'node:worker_threads';
import { CompactorError, type ErrorCode } from '../errors.js';

/**
 * A worker task's way to weigh what it loaded (`Call.weigh`): the in-flight ledger lives on the
 * main thread, so the worker asks over the task's port and waits for the answer; a refusal comes
 * back as the same `CompactorError` (503 `CMP_ERR_OVERLOADED`, its `retry-after`) the main thread
 * threw. The weight stays counted until the request that ran the task ends.
 */

interface WeighRequest {
  n: number;
  chars: number;
}
type WeighReply = { n: number } | { n: number; code: ErrorCode; detail: string; retryAfterSeconds?: number };

/** The main thread's end: `reserve` counts the characters, or throws. */
export function serveWeigh(port: MessagePort, reserve: (chars: number) => void): void {
  port.on('message', ({ n, chars }: WeighRequest) => {
    try {
      reserve(chars);
      port.postMessage({ n } satisfies WeighReply);
    } catch (error) {
      const e =
        error instanceof CompactorError
          ? error
          : new CompactorError('CMP_ERR_INTERNAL', 'the in-flight weight could not be counted');
      const reply: WeighReply = { n, code: e.code, detail: e.message };
      if (e.retryAfterSeconds !== undefined) reply.retryAfterSeconds = e.retryAfterSeconds;
      port.postMessage(reply);
    }
  });
}

/** The worker's end: resolves once counted, rejects with the refusal. */
export function weighOver(port: MessagePort): (chars: number) => Promise<void> {
  let next = 0;
  const waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  port.on('message', (reply: WeighReply) => {
    const w = waiting.get(reply.n);
    waiting.delete(reply.n);
    if (!w) return;
    if ('code' in reply) {
      const options = reply.retryAfterSeconds !== undefined ? { retryAfterSeconds: reply.retryAfterSeconds } : {};
      w.reject(new CompactorError(reply.code, reply.detail, undefined, options));
    } else w.resolve();
  });
  return (chars) =>
    new Promise<void>((resolve, reject) => {
      const n = next++;
      waiting.set(n, { resolve, reject });
      port.postMessage({ n, chars } satisfies WeighRequest);
    });
}
