/** `Atomics.waitAsync` (Node 16+), which the ES2023 library typings do not declare yet. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(a: Int32Array, index: number, value: number, timeout: number): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/**
 * A counting semaphore over one shared integer: at most `limit` calls at once across every thread
 * that holds the same `SharedArrayBuffer` (the main thread and the worker pool), so
 * `COMPACTOR_SUMMARIZER_CONCURRENCY` bounds the calls of the whole process, not of each thread.
 * Waiters sleep on `Atomics.waitAsync` and are woken when a slot is released; no order is promised.
 */
export class Limiter {
  private readonly slots: Int32Array;

  /** @param shared one Int32 of a SharedArrayBuffer (a private one when omitted) */
  constructor(
    private readonly limit: number,
    shared?: Int32Array,
  ) {
    this.slots = shared ?? new Int32Array(new SharedArrayBuffer(4));
  }

  /** Creates the shared integer that threads pass to their limiters. */
  static shared(): Int32Array {
    return new Int32Array(new SharedArrayBuffer(4));
  }

  private async acquire(): Promise<void> {
    for (;;) {
      const taken = Atomics.load(this.slots, 0);
      if (taken < this.limit) {
        if (Atomics.compareExchange(this.slots, 0, taken, taken + 1) === taken) return;
        continue;
      }
      // Sleep until the count changes (a release), then try again; bounded so a lost wake-up costs 50 ms.
      const wait = waitAsync(this.slots, 0, taken, 50);
      if (wait.async) await wait.value;
    }
  }

  private release(): void {
    Atomics.sub(this.slots, 0, 1);
    Atomics.notify(this.slots, 0, 1);
  }

  async run<T>(op: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await op();
    } finally {
      this.release();
    }
  }
}
