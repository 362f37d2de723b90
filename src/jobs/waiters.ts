import type { JobClock, JobListener, JobState } from './types.js';

/** Whether a job reached an end: `ready` or `failed`. */
export function settled(state: JobState<unknown> | undefined): boolean {
  return state?.state === 'ready' || state?.state === 'failed';
}

/** Tells the listener, whatever it does: a counter that throws must not break a job. */
export function tell(listener: JobListener | undefined, event: Parameters<JobListener>[0]): void {
  try {
    listener?.(event);
  } catch {
    // A metrics hook is not allowed to fail a job.
  }
}

/** The message of whatever a processor threw, for the job's `error`. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Wake = (final: boolean) => void;

/**
 * Callers waiting for jobs to settle, woken by the queue's own events (`notify`), never by
 * polling: each wake-up reads the job's state once, and a waiter resolves when the state is
 * settled, unknown, or its bound ran out (then with the state read at that moment).
 */
export class Waiters<Result> {
  private readonly waiting = new Map<string, Set<Wake>>();

  constructor(private readonly clock: JobClock) {}

  /** Something happened to `id`: its waiters read its state again. */
  notify(id: string): void {
    for (const wake of this.waiting.get(id) ?? []) wake(false);
  }

  /** The queue is closing: every waiter reads once more and resolves with what it reads. */
  release(): void {
    for (const wakes of this.waiting.values()) for (const wake of wakes) wake(true);
  }

  /** How many callers are waiting (diagnostics and tests). */
  get size(): number {
    let n = 0;
    for (const wakes of this.waiting.values()) n += wakes.size;
    return n;
  }

  /**
   * Waits for `id` as `JobQueue.wait` describes. `read` reads the state; `listening`, when given,
   * resolves once events for `id` can no longer be missed (the first read happens after it).
   */
  wait(
    id: string,
    ms: number,
    read: () => Promise<JobState<Result> | undefined>,
    signal?: AbortSignal,
    listening?: Promise<void>,
  ): Promise<JobState<Result> | undefined> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let done = false;
      let cancelTimer = (): void => {};
      const finish = (outcome: () => void): void => {
        if (done) return;
        done = true;
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
        const wakes = this.waiting.get(id);
        wakes?.delete(wake);
        if (wakes?.size === 0) this.waiting.delete(id);
        outcome();
      };
      const check = (final: boolean): void => {
        read().then(
          (state) => {
            if (final || state === undefined || settled(state)) finish(() => resolve(state));
          },
          (error: unknown) => finish(() => reject(error)),
        );
      };
      const wake: Wake = (final) => {
        if (!done) check(final);
      };
      const onAbort = (): void => finish(() => reject(signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      const wakes = this.waiting.get(id) ?? new Set<Wake>();
      wakes.add(wake);
      this.waiting.set(id, wakes);
      // 0 ms: the first read answers, whatever it says.
      const first = ms <= 0;
      if (!first) cancelTimer = this.clock.after(ms, () => wake(true));
      if (!listening) wake(first);
      else
        listening.then(
          () => wake(first),
          (error: unknown) => finish(() => reject(error)),
        );
    });
  }
}
