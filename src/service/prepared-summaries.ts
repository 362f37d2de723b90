import type { Warning } from '../history/types.js';
import type { BilledUsage, PreparedContext, PrepareRequest } from '../strategies/types.js';

/**
 * Prepared summaries' contract, one for both preparers: the interface the routes, the operations
 * and the proxy use (`PreparedSummaries`; the operations see its `context` and `after`), the job
 * data, the events and the options. The embedded `Preparer` is `prepare.ts`, the `RedisPreparer`
 * shared by replicas `prepare-redis.ts`; their one retry policy is the jobs' (`JOB_RETRY`).
 */

/** What a prepared summary cost (the summarize call that made it), with its total. */
export type Usage = BilledUsage & { total_tokens: number };

/** One prepared summary as `GET /v1/prepared/{id}` shows it. */
export interface PreparedView {
  id: string;
  state: 'started' | 'running' | 'ready' | 'failed' | 'spliced';
  covers: { from: number; to: number };
  usage: Usage | null;
  created_at: string;
  error?: string;
}

/** A prepared summary's job data: the caller's scope and the `/v1/summarize` body. */
export interface Job {
  scope: string;
  body: Record<string, unknown>;
}

/**
 * What happened to prepared summaries, for the metrics: with the tokens their summarizer calls
 * cost. `dropped`: one dropped before it ran (the queue was full, or its range left the index).
 */
export type PrepareEvent = 'prepared' | 'spliced' | 'wasted' | 'failed' | 'dropped';

/** What a request reports back: the range it asked to prepare, the prepared summary it spliced in. */
export interface PrepareOutcome {
  prepare?: PrepareRequest | undefined;
  spliced?: string | undefined;
  /** With `spliced`: the length of the history it was spliced into (`PreparedEntry.splicedAt`). */
  splicedAt?: number | undefined;
}

/**
 * Prepared summaries as the routes use them: the embedded `Preparer` (one process) or the
 * `RedisPreparer` (replicas sharing Redis; `prepare-redis.ts`).
 */
export interface PreparedSummaries {
  /** The caller's prepared ranges for fit (their usage only while not billed yet). */
  context(scope: string): Promise<PreparedContext>;
  /**
   * What a request asked to prepare and spliced in: the splice billed once, the range prepared.
   * Never rejects: what it could not do, the response is told (`prepared_unavailable`).
   */
  after(scope: string, outcome: PrepareOutcome): Promise<Warning[]>;
  /** `GET /v1/prepared/{id}`: one of the caller's prepared summaries; undefined when unknown or another's. */
  view(scope: string, id: string): Promise<PreparedView | undefined>;
  /** Rejects while prepared summaries cannot be queued (readiness asks); absent where they always can. */
  check?(): Promise<void>;
  close(deadlineMs?: number): Promise<void>;
}

export interface PreparerOptions {
  /** Prepared summaries made at once (the summarizer's own concurrency limit applies too). */
  concurrency: number;
  /** Whether fit prepares when a request does not say (COMPACTOR_PREPARE). */
  byDefault: boolean;
  /** Prepared summaries kept per caller; the oldest unspliced ones go first (counted as wasted). */
  perScope?: number;
  /** Prepared summaries kept in all. */
  maxEntries?: number;
  /** Embedded: jobs waiting to be made, at most (the oldest are dropped for a new one): 16 by default. */
  maxQueued?: number;
  /** Embedded: bytes of the `/v1/summarize` bodies of those jobs, at most: 48 MiB by default (a body at the 32 MiB request limit fits). */
  maxQueuedBytes?: number;
  onEvent?: (event: PrepareEvent, tokens: number) => void;
  /** The wait before the one retry of a failed job, ms: `JOB_RETRY.backoffMs` by default. */
  backoffMs?: number;
}

export const tokensOf = (u: Usage | undefined) => u?.total_tokens ?? 0;
