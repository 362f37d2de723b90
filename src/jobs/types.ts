/**
 * Where a job is: `started` (accepted, waiting for a slot, or waiting out the backoff before its
 * retry), `running` (a processor is inside it), `ready` (it returned a result), `failed` (its
 * last allowed attempt threw).
 */
export type JobStatus = 'started' | 'running' | 'ready' | 'failed';

/** One job's state, as `add`, `state` and `wait` report it. */
export interface JobState<Result> {
  readonly state: JobStatus;
  /** What the processor returned; only when `ready`. */
  readonly result?: Result;
  /** The message of the error the last failed attempt threw; when `failed` (and, while a retry waits, `started`). */
  readonly error?: string;
  /** How many times a processor has started this job (a retry or a takeover after a stall counts). */
  readonly attempts: number;
  /** Milliseconds since the epoch. */
  readonly created_at: number;
  /** Milliseconds since the epoch; when `ready` or `failed`. */
  readonly finished_at?: number;
}

/** What a processor is given besides the job's data. */
export interface JobContext {
  /** The caller's id of the job (opaque here). */
  readonly id: string;
  /**
   * Aborted when the job must stop early: the queue is closing and its deadline passed, or
   * (BullMQ) the job's lock was lost. A processor passes it on to the calls it makes.
   */
  readonly signal: AbortSignal;
  /** 1 for the first run, 2 for the retry (or a run that took over a stalled job). */
  readonly attempt: number;
}

/**
 * The work itself. It resolves with a JSON-serializable result (BullMQ stores it as JSON in
 * Redis); it rejects to fail the attempt. The error's message becomes the job's `error`:
 * it must carry no message content, prompt or key (it is stored and may be logged).
 */
export type JobProcessor<Data, Result> = (data: Data, context: JobContext) => Promise<Result>;

/**
 * Thrown by a processor when a retry cannot help (a request the upstream rejects as invalid):
 * the job fails at once, without the retry.
 */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}

/**
 * The one retry policy of a job, wherever it runs (the embedded preparer's p-queue, BullMQ): at
 * most `attempts` runs, the retry after `backoffMs` (BullMQ's exponential backoff starts at it,
 * and with two attempts waits exactly it), none after a `PermanentJobError`.
 */
export const JOB_RETRY = { attempts: 2, backoffMs: 1000 } as const;

/** Whether a job whose attempt `attempt` (from 1) failed with `error` runs again (`JOB_RETRY`). */
export function retries(error: unknown, attempt: number, attempts: number = JOB_RETRY.attempts): boolean {
  return attempt < attempts && !(error instanceof PermanentJobError);
}

/** `add` was called after `close`. */
export class JobQueueClosedError extends Error {
  override name = 'JobQueueClosedError';
  constructor() {
    super('the job queue is closed');
  }
}

/** The backing store did not answer in time (a hung Redis): the call may be retried. */
export class JobQueueUnavailableError extends Error {
  override name = 'JobQueueUnavailableError';
}

/** What a `JobListener` is told, once per occurrence, by the replica where it happened. */
export type JobEvent = 'added' | 'deduped' | 'started' | 'completed' | 'failed' | 'retried' | 'stalled';

/**
 * Counters the caller attaches (Prometheus, tests). Called synchronously; it must not throw (an
 * exception is swallowed) and must not block. `started` counts every attempt, `retried` each
 * failed attempt that will run again, `failed` a job whose last attempt failed, `stalled` a job
 * this replica found abandoned by a dead one (BullMQ only).
 */
export type JobListener = (event: JobEvent) => void;

/**
 * Jobs keyed by an id the caller derives (tenant scope and range hash): the same id is queued and
 * run once, however many callers or replicas add it, and its state stays readable for a TTL.
 * There is deliberately no way to list jobs: a caller reads only the ids it can derive.
 */
export interface JobQueue<Data, Result> {
  /**
   * Queues the job `id` unless it is queued, running or finished already (then `data` is
   * ignored: first writer wins). Resolves with the job's current state.
   * Fails with `JobQueueClosedError` after `close`, or with the backing store's error.
   */
  add(id: string, data: Data): Promise<JobState<Result>>;
  /** The job's state; undefined for an id never added, or whose state expired. */
  state(id: string): Promise<JobState<Result> | undefined>;
  /** Resolves when jobs can be added and read now; rejects (the store's error) while they cannot. */
  ping(): Promise<void>;
  /**
   * Stops taking jobs (`add` then fails), lets running ones finish for up to `deadlineMs` (the
   * queue's default when omitted), then aborts their signals and resolves. What each
   * implementation does with a job it did not finish is in its own TSDoc.
   */
  close(deadlineMs?: number): Promise<void>;
}

/** Time for the queue: the clock and a cancellable timer (tests pass a fake). */
export interface JobClock {
  now(): number;
  /** Calls `fn` once after `ms`; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** The real clock: `Date.now` and unref'd timers (a pending timer never keeps the process alive). */
export const systemClock: JobClock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
