import { CompactorError } from '../errors.js';
import type { Warning } from '../history/types.js';
import { EmbeddedJobQueue, type JobEvent, type JobQueue, MemoryJobRecords, PermanentJobError } from '../jobs/index.js';
import { STRATEGIES } from '../strategies/registry.js';
import type { BilledUsage, PreparedContext, PrepareRequest } from '../strategies/types.js';
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
}

/** A prepared summary's job data: the caller's scope and the `/v1/summarize` body. */
export interface Job {
  scope: string;
  body: Record<string, unknown>;
}

/** What happened to prepared summaries, for the metrics: with the tokens their summarizer calls cost. */
export type PrepareEvent = 'prepared' | 'spliced' | 'wasted' | 'failed';

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
  /**
   * What a request asked to prepare and spliced in: the splice billed once, the range prepared.
   * Never rejects: what it could not do, the response is told (`prepared_unavailable`).
   */
  after(scope: string, outcome: PrepareOutcome): Promise<Warning[]>;
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
  private readonly queue: JobQueue<Job, Usage>;

  constructor(
    private readonly compactor: Compactor,
    private readonly options: PreparerOptions,
  ) {
    this.queue = new EmbeddedJobQueue<Job, Usage>({
      processor: (job, context) => this.make(job, context.id, context.signal),
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
    this.entries.set(key, { scope, range, state: 'started', usage: undefined, billed: false, created: Date.now() });
    this.bound(scope);
    this.queue.add(key, { scope, body }).catch(() => {
      const entry = this.entries.get(key);
      if (entry) entry.state = 'failed';
    });
  }

  async after(scope: string, outcome: PrepareOutcome): Promise<Warning[]> {
    if (outcome.spliced) this.spliced(scope, outcome.spliced);
    if (outcome.prepare) this.add(scope, outcome.prepare);
    return [];
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

  /** The job, with the entry's state kept along. */
  private async make(job: Job, key: string, signal: AbortSignal): Promise<Usage> {
    const entry = this.entries.get(key);
    if (entry) entry.state = 'running';
    try {
      const usage = await summarizeFor(this.compactor, job, signal);
      if (entry) Object.assign(entry, { state: 'ready', usage });
      this.options.onEvent?.('prepared', tokensOf(usage));
      return usage;
    } catch (error) {
      if (entry) Object.assign(entry, { state: 'failed', error: (error as Error).message });
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
      this.entries.delete(key);
      if (e.scope === scope) mine--;
    }
  }
}
