import { CompactorError } from '../errors.js';
import {
  EmbeddedJobQueue,
  type JobContext,
  type JobEvent,
  type JobQueue,
  MemoryJobRecords,
  PermanentJobError,
} from '../jobs/index.js';
import { STRATEGIES } from '../strategies/registry.js';
import { type BilledUsage, NO_BILLED, type PreparedContext, type PrepareRequest } from '../strategies/types.js';
import type { Compactor } from './compactor.js';
import { OPERATIONS } from './operations.js';

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

interface Entry {
  readonly scope: string;
  readonly range: Omit<PrepareRequest, 'body'>;
  state: PreparedView['state'];
  usage: Usage | undefined;
  /** Whether a response has billed its usage (it is billed once). */
  billed: boolean;
  readonly created: number;
  error?: string;
  /** The job's `/v1/summarize` body as JSON while it waits to be made (held once, here), then undefined. */
  body: string | undefined;
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
}

/**
 * Prepared summaries as the routes use them: the embedded `Preparer` (one process) or the
 * `RedisPreparer` (replicas sharing Redis; `prepare-redis.ts`).
 */
export interface PreparedSummaries {
  /** The caller's prepared ranges for fit (their usage only while not billed yet). */
  context(scope: string): Promise<PreparedContext>;
  /** What a request asked to prepare and spliced in: the splice billed once, the range prepared. */
  after(scope: string, outcome: PrepareOutcome): Promise<void>;
  /** `GET /v1/prepared/{id}`: one of the caller's prepared summaries; undefined when unknown or another's. */
  view(scope: string, id: string): Promise<PreparedView | undefined>;
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
  /** Embedded: jobs waiting to be made, at most (the oldest are dropped for a new one): 64 by default. */
  maxQueued?: number;
  /** Embedded: bytes of the `/v1/summarize` bodies of those jobs, at most: 64 MiB by default. */
  maxQueuedBytes?: number;
  onEvent?: (event: PrepareEvent, tokens: number) => void;
  onJob?: (event: JobEvent) => void;
}

export const tokensOf = (u: Usage | undefined) => u?.total_tokens ?? 0;

/**
 * A prepared summary's job: the caller's `/v1/summarize` covering the range, its summary written
 * to the summary cache. Its error message is an error code (no content); a request the
 * summarizer or our own checks reject fails for good (`PermanentJobError`: no retry).
 */
export async function summarizeFor(compactor: Compactor, job: Job, signal: AbortSignal): Promise<Usage> {
  try {
    const caller = compactor.callerOfScope(job.scope);
    const request = OPERATIONS['/v1/summarize'].check(job.body);
    return (await compactor.run(STRATEGIES.summarize, request, request, { signal, caller })).usage;
  } catch (error) {
    const message = error instanceof CompactorError ? error.code : 'internal error';
    if (error instanceof CompactorError && /VALIDATION|OPTIONS|REQUEST/.test(error.code)) throw new PermanentJobError(message);
    throw new Error(message);
  }
}

/**
 * Prepared summaries (issue 22, embedded): the summaries fit asks for ahead of need, made off the
 * request path on an in-process job queue (one run per range, one retry with backoff) by the same
 * `/v1/summarize` operation a client would call, as the caller who asked. What it makes lands in
 * the summary cache (the store), where the request that needs it finds it; this object keeps the
 * caller's index of ranges (scope, prefix, range, state) that fit matches a later history against,
 * and bills each summary once, to the response that splices it in. One per process, on the main
 * thread: requests run on worker threads get the caller's entries with their task and report back.
 */
export class Preparer implements PreparedSummaries {
  private readonly entries = new Map<string, Entry>();
  private readonly queue: JobQueue<Pick<Job, 'scope'>, Usage>;
  /** Keys of the entries whose jobs wait to be made (they hold a body), oldest first, with its bytes. */
  private readonly waiting = new Map<string, number>();
  private waitingBytes = 0;

  constructor(
    private readonly compactor: Compactor,
    private readonly options: PreparerOptions,
  ) {
    this.queue = new EmbeddedJobQueue<Pick<Job, 'scope'>, Usage>({
      processor: (job, context) => this.make(job.scope, context),
      records: new MemoryJobRecords(options.maxEntries ?? 10_000),
      concurrency: options.concurrency,
      ttlSeconds: 24 * 3600,
      ...(options.onJob ? { listener: options.onJob } : {}),
    });
  }

  async context(scope: string): Promise<PreparedContext> {
    const entries: PreparedContext['entries'][number][] = [];
    for (const e of this.entries.values()) {
      if (e.scope !== scope) continue;
      entries.push({ ...e.range, state: e.state, ...(e.usage && !e.billed ? { usage: e.usage } : {}) });
    }
    return { entries, byDefault: this.options.byDefault };
  }

  /** Starts preparing a range fit asked for, unless it is known already. */
  add(scope: string, request: PrepareRequest): void {
    const key = `${scope}\0${request.id}`;
    if (this.entries.has(key)) return;
    const { body, ...range } = request;
    const text = JSON.stringify(body);
    const bytes = Buffer.byteLength(text);
    const entry: Entry = { scope, range, state: 'started', usage: undefined, billed: false, created: Date.now(), body: text };
    this.entries.set(key, entry);
    this.bound(scope);
    if (!this.makeRoom(bytes)) {
      this.drop(key, 'CMP_ERR_OVERLOADED');
      return;
    }
    this.waiting.set(key, bytes);
    this.waitingBytes += bytes;
    this.queue.add(key, { scope }).catch(() => {
      this.release(key);
      entry.state = 'failed';
    });
  }

  /**
   * Drops the oldest waiting jobs until one of `bytes` fits under `maxQueued` and `maxQueuedBytes`
   * (a slow summarizer must not pile up histories); false when it cannot fit at all.
   */
  private makeRoom(bytes: number): boolean {
    const maxCount = this.options.maxQueued ?? 64;
    const maxBytes = this.options.maxQueuedBytes ?? 64 * 1024 * 1024;
    if (bytes > maxBytes || maxCount < 1) return false;
    for (const key of this.waiting.keys()) {
      if (this.waiting.size < maxCount && this.waitingBytes + bytes <= maxBytes) break;
      this.drop(key, 'CMP_ERR_OVERLOADED');
    }
    return true;
  }

  /** A job dropped before it ran: its body released, its entry (if kept) failed with `error`, counted. */
  private drop(key: string, error: string): void {
    this.release(key);
    const entry = this.entries.get(key);
    if (entry) Object.assign(entry, { state: 'failed', error });
    this.options.onEvent?.('dropped', 0);
  }

  /** Forgets a waiting job's body; whether it was waiting. */
  private release(key: string): boolean {
    const bytes = this.waiting.get(key);
    const entry = this.entries.get(key);
    if (entry) entry.body = undefined;
    if (bytes === undefined) return false;
    this.waiting.delete(key);
    this.waitingBytes -= bytes;
    return true;
  }

  async after(scope: string, outcome: PrepareOutcome): Promise<void> {
    if (outcome.spliced) this.spliced(scope, outcome.spliced);
    if (outcome.prepare) this.add(scope, outcome.prepare);
  }

  /** A response spliced `id` in: counted, and billed there if it was not billed already. */
  spliced(scope: string, id: string): void {
    const entry = this.entries.get(`${scope}\0${id}`);
    if (!entry) return;
    if (!entry.billed) this.options.onEvent?.('spliced', tokensOf(entry.usage));
    entry.billed = true;
    entry.state = 'spliced';
  }

  async view(scope: string, id: string): Promise<PreparedView | undefined> {
    const entry = this.entries.get(`${scope}\0${id}`);
    if (!entry) return undefined;
    const { from, to } = entry.range;
    return {
      id,
      state: entry.state,
      covers: { from, to },
      usage: entry.usage ?? null,
      created_at: new Date(entry.created).toISOString(),
      ...(entry.error ? { error: entry.error } : {}),
    };
  }

  close(deadlineMs?: number): Promise<void> {
    return this.queue.close(deadlineMs);
  }

  /**
   * The job, with the entry's state kept along. One dropped before it ran (its range left the
   * index, or the queue was full) makes nothing: no summarizer call for a range no call can splice.
   */
  private async make(scope: string, { id: key, signal, attempt }: JobContext): Promise<Usage> {
    const entry = this.entries.get(key);
    const text = entry?.body;
    if (!entry || text === undefined) return { ...NO_BILLED, total_tokens: 0 };
    // Running: no longer waiting (nor dropped for room); the body stays for a retry until it settles.
    const bytes = this.waiting.get(key);
    if (bytes !== undefined) {
      this.waiting.delete(key);
      this.waitingBytes -= bytes;
    }
    entry.state = 'running';
    try {
      const usage = await summarizeFor(this.compactor, { scope, body: JSON.parse(text) }, signal);
      entry.body = undefined;
      if (entry) Object.assign(entry, { state: 'ready', usage });
      this.options.onEvent?.('prepared', tokensOf(usage));
      return usage;
    } catch (error) {
      if (error instanceof PermanentJobError || attempt >= 2) entry.body = undefined;
      Object.assign(entry, { state: 'failed', error: (error as Error).message });
      this.options.onEvent?.('failed', 0);
      throw error;
    }
  }

  /** Keeps at most `perScope` entries per caller and `maxEntries` in all, oldest first; an unspliced ready one is wasted. */
  private bound(scope: string): void {
    const perScope = this.options.perScope ?? 32;
    const max = this.options.maxEntries ?? 10_000;
    let mine = 0;
    for (const e of this.entries.values()) if (e.scope === scope) mine++;
    for (const [key, e] of this.entries) {
      if (mine <= perScope && this.entries.size <= max) break;
      if (e.scope !== scope && this.entries.size <= max) continue;
      if (e.state === 'ready' && !e.billed) this.options.onEvent?.('wasted', tokensOf(e.usage));
      // Its job, if it has not started, never will: nothing could splice what it would make.
      if (e.state === 'started' && this.release(key)) this.options.onEvent?.('dropped', 0);
      this.entries.delete(key);
      if (e.scope === scope) mine--;
    }
  }
}
