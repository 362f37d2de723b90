import { EmbeddedJobQueue, type EmbeddedJobQueueOptions } from '../../src/jobs/embedded.js';
import { MemoryJobRecords } from '../../src/jobs/memory-records.js';
import type { JobClock, JobEvent, JobListener } from '../../src/jobs/types.js';

/** A promise and the functions that settle it. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (a few macrotask turns: records are async). */
export async function flush(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A clock that moves only when told: timers fire in order of their due time during `advance`. */
export class FakeClock implements JobClock {
  private timers: { at: number; ms: number; fn: () => void }[] = [];
  /** Every delay asked for, in order (backoffs, wait bounds, close deadlines). */
  readonly asked: number[] = [];

  constructor(private time = 1_800_000_000_000) {}

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.time + ms, ms, fn };
    this.timers.push(timer);
    this.asked.push(ms);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Timers not fired nor cancelled. */
  get pending(): number[] {
    return this.timers.map((t) => t.ms);
  }

  /** Moves time forward by `ms`, firing the timers that fall due (and letting their effects run). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
      await flush();
    }
    this.time = end;
    await flush();
  }
}

/** A listener that counts events, and the order they came in. */
export function counting(): { listener: JobListener; counts: Record<JobEvent, number>; order: JobEvent[] } {
  const counts: Record<JobEvent, number> = { added: 0, deduped: 0, started: 0, completed: 0, failed: 0, retried: 0, stalled: 0 };
  const order: JobEvent[] = [];
  return {
    counts,
    order,
    listener: (event) => {
      counts[event]++;
      order.push(event);
    },
  };
}

type Options = EmbeddedJobQueueOptions<string, string>;

/** An embedded queue of string jobs on a fake clock and memory records, with an event count. */
export function embedded(overrides: Partial<Options> & Pick<Options, 'processor'>) {
  const clock = new FakeClock();
  const records = new MemoryJobRecords();
  const events = counting();
  const q = new EmbeddedJobQueue<string, string>({
    records,
    concurrency: 2,
    ttlSeconds: 60,
    clock,
    listener: events.listener,
    ...overrides,
  });
  return { q, clock, records, events };
}
