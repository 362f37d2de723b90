import { createHash } from 'node:crypto';
import type { Job } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import { JOB_RETRY, type JobClock, type JobListener, type JobProcessor, type JobState, type JobStatus } from './types.js';

/** What the BullMQ queue is built from. Durations in ms unless the name says otherwise. */
export interface BullJobQueueOptions<Data, Result> {
  /** `redis://…` or `rediss://…` (the store's URL). */
  readonly url: string;
  /** More ioredis options (TLS, sentinels); `maxRetriesPerRequest` is set here per connection. */
  readonly redisOptions?: RedisOptions;
  /**
   * First part of every key: `<prefix>:<name>:…`. Default `compactor`. On Redis Cluster wrap it in
   * braces (`{compactor}`) so that a queue's keys share a slot, as BullMQ requires.
   */
  readonly prefix?: string;
  /** The queue's name (no `:`): default `jobs`. Replicas that share jobs share prefix and name. */
  readonly name?: string;
  readonly processor: JobProcessor<Data, Result>;
  /** Jobs this replica runs at once (the summarizer concurrency); at least 1. */
  readonly concurrency: number;
  /**
   * How long a finished job stays readable, seconds (BullMQ's `removeOnComplete`/`removeOnFail`
   * age). BullMQ removes aged jobs lazily, when a later job finishes: at least this long, then.
   */
  readonly ttlSeconds: number;
  /** Runs a job may have: 2 (one retry) by default. */
  readonly attempts?: number;
  /** BullMQ's exponential backoff: retry n waits `backoffMs · 2^(n-1)`; 1000 by default. */
  readonly backoffMs?: number;
  /**
   * How long a job's lock lasts without renewal (renewed every half of it while the replica
   * lives): 20,000 by default. A replica whose event loop stalls longer loses its jobs to others.
   */
  readonly lockDurationMs?: number;
  /** How often this replica looks for jobs whose lock expired (a dead replica's): 10,000 by default. */
  readonly stalledIntervalMs?: number;
  /** Takeovers a job may have before it fails (a job that kills its replica fails): 1 by default. */
  readonly maxStalledCount?: number;
  /**
   * How long each Redis command of `add` and `state` may take before it rejects, so that a Redis
   * that hangs (paused, a full network buffer) never holds a request: 2,000 by default. `add` and
   * `state` as a whole (several commands, the connection's first ones loading scripts) are bounded
   * by `callTimeoutMs`: 5,000 by default.
   */
  readonly commandTimeoutMs?: number;
  readonly callTimeoutMs?: number;
  /** `close`'s default deadline for running jobs: 10,000 by default. */
  readonly closeDeadlineMs?: number;
  /** false: this replica adds and reads jobs but runs none (no worker). Default true. */
  readonly work?: boolean;
  /** For `close`'s bounds and an aged-out job's `created_at` (BullMQ keeps its own time). */
  readonly clock?: JobClock;
  readonly listener?: JobListener;
  /** Connection and worker errors BullMQ reports in the background (it reconnects by itself). */
  readonly onError?: (error: unknown) => void;
}

/** The defaults, chosen for summaries that take seconds (see `README.md` in this folder). */
export const bullDefaults = {
  prefix: 'compactor',
  name: 'jobs',
  attempts: JOB_RETRY.attempts,
  backoffMs: JOB_RETRY.backoffMs,
  lockDurationMs: 20_000,
  stalledIntervalMs: 10_000,
  maxStalledCount: 1,
  commandTimeoutMs: 2000,
  callTimeoutMs: 5000,
  closeDeadlineMs: 10_000,
} as const;

/** What a BullMQ job carries: the caller's id and data, and the nonce of the `add` that created it. */
export interface Envelope<Data> {
  readonly id: string;
  readonly data: Data;
  readonly nonce: string;
}

/**
 * BullMQ's job id for a caller's id: `j` and the SHA-256 of it, base64url. BullMQ refuses ids that
 * are integers or hold `:`; the caller's ids are opaque and may be either, or long.
 */
export function bullJobId(id: string): string {
  return `j${createHash('sha256').update(id).digest('base64url')}`;
}

const statuses: Record<string, JobStatus | undefined> = {
  active: 'running',
  completed: 'ready',
  failed: 'failed',
  waiting: 'started',
  delayed: 'started',
  prioritized: 'started',
  'waiting-children': 'started',
};

/** A BullMQ job and its state as this layer's `JobState`; undefined when BullMQ no longer knows it. */
export function stateOf<Data, Result>(job: Job<Envelope<Data>, Result>, bullState: string): JobState<Result> | undefined {
  const state = statuses[bullState];
  if (!state) return undefined;
  const base = { state, attempts: job.attemptsStarted ?? 0, created_at: job.timestamp };
  if (state === 'ready') return { ...base, result: job.returnvalue, finished_at: job.finishedOn ?? job.timestamp };
  if (state === 'failed') return { ...base, error: job.failedReason, finished_at: job.finishedOn ?? job.timestamp };
  return job.failedReason && state === 'started' ? { ...base, error: job.failedReason } : base;
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
