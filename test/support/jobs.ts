import type { JobEvent, JobListener, JobQueue, JobState } from '../../src/jobs/types.js';

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

/**
 * The job's state once it is ready or failed, or as it is after `ms`: read through the queue's
 * own API (`state`), every 20 ms. Tests only: the service never waits on a job.
 */
export async function settle<R>(q: JobQueue<unknown, R>, id: string, ms: number): Promise<JobState<R> | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const state = await q.state(id);
    if (state?.state === 'ready' || state?.state === 'failed' || Date.now() >= until) return state;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
