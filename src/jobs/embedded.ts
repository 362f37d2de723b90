import {
  type JobClock,
  type JobListener,
  type JobProcessor,
  type JobQueue,
  JobQueueClosedError,
  type JobRecords,
  type JobState,
  PermanentJobError,
  systemClock,
} from './types.js';
import { messageOf, settled, tell, Waiters } from './waiters.js';

/** What the embedded queue is built from. */
export interface EmbeddedJobQueueOptions<Data, Result> {
  readonly processor: JobProcessor<Data, Result>;
  /** Where every job's state is kept (the artifact store in the service; `MemoryJobRecords` in tests). */
  readonly records: JobRecords;
  /** Jobs running at once (the summarizer concurrency); at least 1. */
  readonly concurrency: number;
  /** How long a job's state stays readable after its last change, seconds. */
  readonly ttlSeconds: number;
  /** Runs a job may have: 2 (one retry) by default; 1 disables the retry. */
  readonly attempts?: number;
  /** The wait before retry n is `backoffMs · 2^(n-1)`: 1000 ms before the one retry by default. */
  readonly backoffMs?: number;
  /** `close`'s default deadline for running jobs, ms: 10,000 by default. */
  readonly closeDeadlineMs?: number;
  readonly clock?: JobClock;
  readonly listener?: JobListener;
  /** A state write that failed after `add` returned (the job's state is then lost: the next `add` runs it again). */
  readonly onError?: (error: unknown) => void;
}

interface LiveJob<Data, Result> {
  readonly id: string;
  readonly data: Data;
  state: JobState<Result>;
  /** The state writes of this job, in order; never rejects. */
  writes: Promise<void>;
  controller?: AbortController;
  /** Settles when the current attempt and its state write have ended. */
  running?: Promise<void>;
  cancelRetry?: () => void;
}

/**
 * The in-process queue of the embedded mode: at most `concurrency` jobs run at once, an id is
 * queued once (while it is queued, running or its state is readable), a failed attempt is retried
 * `attempts - 1` times after an exponential backoff, and every state change is written to
 * `records`.
 *
 * One process owns its records. At process exit the jobs it was running or had queued are lost;
 * their records still say `started` or `running`, and the next `add` of such an id (which this
 * process never queued) runs it again: "redone on the next request" is the embedded contract.
 * `close` does the same on purpose: queued jobs are not started, retries not waited for, and a
 * job still running at the deadline is aborted and keeps its `running` record.
 */
export class EmbeddedJobQueue<Data, Result> implements JobQueue<Data, Result> {
  private readonly live = new Map<string, LiveJob<Data, Result>>();
  private readonly admitting = new Map<string, Promise<JobState<Result>>>();
  /** Jobs waiting for a slot, oldest first. */
  private readonly queued = new Set<LiveJob<Data, Result>>();
  private readonly waiters: Waiters<Result>;
  private readonly clock: JobClock;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private running = 0;
  private closing: Promise<void> | undefined;

  /** @throws RangeError when `concurrency`, `attempts` or `ttlSeconds` is not a positive integer */
  constructor(private readonly options: EmbeddedJobQueueOptions<Data, Result>) {
    for (const [name, value] of Object.entries({
      concurrency: options.concurrency,
      attempts: options.attempts ?? 2,
      ttlSeconds: options.ttlSeconds,
    })) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
    }
    this.clock = options.clock ?? systemClock;
    this.waiters = new Waiters(this.clock);
    this.attempts = options.attempts ?? 2;
    this.backoffMs = options.backoffMs ?? 1000;
  }

  async add(id: string, data: Data): Promise<JobState<Result>> {
    if (this.closing) throw new JobQueueClosedError();
    const live = this.live.get(id);
    const pending = live ? undefined : this.admitting.get(id);
    if (live || pending) {
      tell(this.options.listener, 'deduped');
      return live ? live.state : (pending as Promise<JobState<Result>>);
    }
    const admission = this.admit(id, data);
    this.admitting.set(id, admission);
    try {
      return await admission;
    } finally {
      this.admitting.delete(id);
    }
  }

  async state(id: string): Promise<JobState<Result> | undefined> {
    const live = this.live.get(id);
    if (live) return live.state;
    return (await this.options.records.get(id, this.clock.now())) as JobState<Result> | undefined;
  }

  wait(id: string, ms: number, signal?: AbortSignal): Promise<JobState<Result> | undefined> {
    return this.waiters.wait(id, ms, () => this.state(id), signal);
  }

  close(deadlineMs = this.options.closeDeadlineMs ?? 10_000): Promise<void> {
    this.closing ??= this.drain(deadlineMs);
    return this.closing;
  }

  /** First add of `id` in this process: a finished record answers; anything else (re)starts it. */
  private async admit(id: string, data: Data): Promise<JobState<Result>> {
    const now = this.clock.now();
    const record = (await this.options.records.get(id, now)) as JobState<Result> | undefined;
    if (record && settled(record)) {
      tell(this.options.listener, 'deduped');
      return record;
    }
    // No record, or one that a process which no longer runs it left `started`/`running`.
    const state: JobState<Result> = { state: 'started', attempts: 0, created_at: now };
    await this.options.records.put(id, state, this.options.ttlSeconds, now);
    if (this.closing) throw new JobQueueClosedError();
    const job: LiveJob<Data, Result> = { id, data, state, writes: Promise.resolve() };
    this.live.set(id, job);
    tell(this.options.listener, 'added');
    this.queued.add(job);
    this.pump();
    return state;
  }

  private pump(): void {
    while (!this.closing && this.running < this.options.concurrency) {
      const next = this.queued.values().next();
      if (next.done) return;
      this.queued.delete(next.value);
      this.start(next.value);
    }
  }

  private start(job: LiveJob<Data, Result>): void {
    this.running++;
    const attempt = job.state.attempts + 1;
    job.controller = new AbortController();
    this.update(job, { state: 'running', attempts: attempt, created_at: job.state.created_at });
    tell(this.options.listener, 'started');
    job.running = this.attempt(job, attempt, job.controller.signal)
      .then(() => job.writes)
      .finally(() => {
        this.running--;
        job.running = undefined;
        this.pump();
      });
  }

  private async attempt(job: LiveJob<Data, Result>, attempt: number, signal: AbortSignal): Promise<void> {
    const base = { attempts: attempt, created_at: job.state.created_at };
    let result: Result;
    try {
      result = await this.options.processor(job.data, { id: job.id, signal, attempt });
    } catch (error) {
      // Aborted by `close`: the record keeps `running`, so a later process redoes it.
      if (signal.aborted && this.closing) return;
      const retry = !(error instanceof PermanentJobError) && attempt < this.attempts;
      if (!retry) {
        tell(this.options.listener, 'failed');
        this.finish(job, { ...base, state: 'failed', error: messageOf(error), finished_at: this.clock.now() });
        return;
      }
      this.update(job, { ...base, state: 'started', error: messageOf(error) });
      // Closing: the retry is not waited for; the `started` record has it redone later.
      if (this.closing) return;
      tell(this.options.listener, 'retried');
      job.cancelRetry = this.clock.after(this.backoffMs * 2 ** (attempt - 1), () => {
        job.cancelRetry = undefined;
        this.queued.add(job);
        this.pump();
      });
      return;
    }
    tell(this.options.listener, 'completed');
    this.finish(job, { ...base, state: 'ready', result, finished_at: this.clock.now() });
  }

  /** Sets the job's state now (readers see it at once) and queues its write after the earlier ones. */
  private update(job: LiveJob<Data, Result>, state: JobState<Result>): void {
    job.state = state;
    job.writes = job.writes
      .then(() => this.options.records.put(job.id, state, this.options.ttlSeconds, this.clock.now()))
      .catch((error: unknown) => this.options.onError?.(error));
    this.waiters.notify(job.id);
  }

  /** A settled job leaves the live set once its record is written; from then on the record answers. */
  private finish(job: LiveJob<Data, Result>, state: JobState<Result>): void {
    this.update(job, state);
    job.writes = job.writes.then(() => {
      if (this.live.get(job.id) === job) this.live.delete(job.id);
    });
  }

  private async drain(deadlineMs: number): Promise<void> {
    this.queued.clear();
    const jobs = [...this.live.values()];
    for (const job of jobs) job.cancelRetry?.();
    let cancel = (): void => {};
    const deadline = new Promise<boolean>((resolve) => {
      cancel = this.clock.after(deadlineMs, () => resolve(false));
    });
    const drained = Promise.all(jobs.map((job) => job.running ?? job.writes)).then(() => true);
    const inTime = await Promise.race([drained, deadline]);
    cancel();
    if (!inTime) for (const job of jobs) job.controller?.abort(new JobQueueClosedError());
    this.waiters.release();
  }
}
