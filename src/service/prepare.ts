import PQueue from 'p-queue';
import pTimeout from 'p-timeout';
import { CompactorError } from '../errors.js';
import type { Warning } from '../history/types.js';
import { JOB_RETRY, PermanentJobError, retries } from '../jobs/index.js';
import { STRATEGIES } from '../strategies/registry.js';
import type { PreparedContext, PrepareRequest } from '../strategies/types.js';
import type { Compactor } from './compactor.js';
import { OPERATIONS } from './operations.js';
import {
  type Job,
  type PreparedSummaries,
  type PreparedView,
  type PrepareOutcome,
  type PreparerOptions,
  tokensOf,
  type Usage,
} from './prepared-summaries.js';
import { parseJsonBytes } from './request-body.js';
import { settledBy, settleSignals } from './settle.js';

interface Entry {
  readonly scope: string;
  readonly range: Omit<PrepareRequest, 'body'>;
  state: PreparedView['state'];
  usage: Usage | undefined;
  /** Whether a response has billed its usage (it is billed once). */
  billed: boolean;
  /** The shortest history a fit spliced it into (`PreparedEntry.splicedAt`). */
  splicedAt: number | undefined;
  readonly created: number;
  error?: string;
  /**
   * The job's `/v1/summarize` body as JSON bytes until it settles (held once, here), then
   * undefined. Parsed from the bytes, its messages are tagged by them (`content-tag.ts`) as a
   * request's are: the job finds the counts the calls that sent those messages made.
   */
  body: Buffer | undefined;
}

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
 * request path by the same `/v1/summarize` operation a client would call, as the caller who
 * asked, at most `concurrency` at once (p-queue), one retry after a backoff. What it makes lands
 * in the summary cache (the store), where the request that needs it finds it. The state is kept
 * once, here: each caller's index of ranges (scope, prefix, range, state, usage) that fit matches
 * a later history against, with the body of each job until it settles. It bills each summary
 * once, to the response that splices it in. One per process, on the main thread: requests run on
 * worker threads get the caller's entries with their task and report back. A restart forgets
 * everything: the next call that finds a summary due prepares again.
 */
export class Preparer implements PreparedSummaries {
  private readonly entries = new Map<string, Entry>();
  private readonly queue: PQueue;
  /** Keys of the entries whose jobs wait for a slot (not running yet), oldest first, with their bytes. */
  private readonly waiting = new Map<string, number>();
  private waitingBytes = 0;
  private readonly retries = new Set<NodeJS.Timeout>();
  /** The running attempts' signals (`close` aborts them). */
  private readonly running = new Set<AbortController>();
  private closing = false;
  /** A range settled (ready, or failed for good): its waiting fits are told. */
  private readonly settles = settleSignals();

  constructor(
    private readonly compactor: Compactor,
    private readonly options: PreparerOptions,
  ) {
    this.queue = new PQueue({ concurrency: options.concurrency });
  }

  async context(scope: string): Promise<PreparedContext> {
    const entries: PreparedContext['entries'][number][] = [];
    for (const e of this.entries.values()) {
      if (e.scope !== scope) continue;
      entries.push({
        ...e.range,
        state: e.state,
        ...(e.usage && !e.billed ? { usage: e.usage } : {}),
        ...(e.splicedAt !== undefined ? { splicedAt: e.splicedAt } : {}),
      });
    }
    const settled = (id: string, ms: number, signal?: AbortSignal) => this.settled(scope, id, ms, signal);
    return { entries, byDefault: this.options.byDefault, settled };
  }

  /** `PreparedContext.settled`: resolves when the entry's job ends (ready or failed), within `ms`. */
  settled(scope: string, id: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    const key = `${scope}\0${id}`;
    return settledBy(this.settles, key, ms, signal, async () => {
      const e = this.entries.get(key);
      if (!e || (e.state === 'failed' && e.body === undefined)) return false;
      return e.state === 'ready' || e.state === 'spliced' ? true : undefined;
    });
  }

  /** Starts preparing a range fit asked for, unless it is known already. */
  add(scope: string, request: PrepareRequest): void {
    const key = `${scope}\0${request.id}`;
    if (this.entries.has(key) || this.closing) return;
    const { body, ...range } = request;
    const json = Buffer.from(JSON.stringify(body));
    const bytes = json.length;
    const entry: Entry = {
      scope,
      range,
      state: 'started',
      usage: undefined,
      billed: false,
      splicedAt: undefined,
      created: Date.now(),
      body: json,
    };
    this.entries.set(key, entry);
    this.bound(scope);
    if (!this.makeRoom(bytes)) {
      this.drop(key, 'CMP_ERR_OVERLOADED');
      return;
    }
    this.schedule(key, entry, bytes, 1);
  }

  async after(scope: string, outcome: PrepareOutcome): Promise<Warning[]> {
    if (outcome.spliced) this.spliced(scope, outcome.spliced, outcome.splicedAt);
    if (outcome.prepare) this.add(scope, outcome.prepare);
    return [];
  }

  /** A response spliced `id` in (into a history of `length` messages): counted, and billed there if it was not billed already. */
  spliced(scope: string, id: string, length?: number): void {
    const entry = this.entries.get(`${scope}\0${id}`);
    if (!entry) return;
    if (!entry.billed) this.options.onEvent?.('spliced', tokensOf(entry.usage));
    entry.billed = true;
    entry.state = 'spliced';
    if (length !== undefined) entry.splicedAt = Math.min(entry.splicedAt ?? length, length);
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

  /**
   * Stops taking jobs; waiting ones and pending retries are dropped (a restart redoes them on the
   * next request), running ones get `deadlineMs` (10 s by default) to finish, then their signals abort.
   */
  async close(deadlineMs = 10_000): Promise<void> {
    this.closing = true;
    this.queue.clear();
    for (const timer of this.retries) clearTimeout(timer);
    await pTimeout(this.queue.onIdle(), { milliseconds: Math.max(1, deadlineMs), message: false });
    for (const controller of this.running) controller.abort();
  }

  /** Queues attempt `attempt` of the entry's job; a waiting one holds `bytes` of the queue's bound. */
  private schedule(key: string, entry: Entry, bytes: number, attempt: number): void {
    if (attempt === 1) {
      this.waiting.set(key, bytes);
      this.waitingBytes += bytes;
    }
    this.queue.add(() => this.make(key, entry, attempt)).catch(() => {});
  }

  /**
   * One attempt of a job, the entry's state kept along. One dropped before it ran (its range left
   * the index, or the queue was full) makes nothing: no summarizer call for a range no call can
   * splice. A failure other than a permanent one is retried once, after `backoffMs`.
   */
  private async make(key: string, entry: Entry, attempt: number): Promise<void> {
    this.unwait(key);
    const json = entry.body;
    if (json === undefined || this.entries.get(key) !== entry || this.closing) return;
    entry.state = 'running';
    const controller = new AbortController();
    this.running.add(controller);
    try {
      const body = parseJsonBytes(json) as Record<string, unknown>;
      const usage = await summarizeFor(this.compactor, { scope: entry.scope, body }, controller.signal);
      Object.assign(entry, { state: 'ready', usage, body: undefined, error: undefined });
      this.options.onEvent?.('prepared', tokensOf(usage));
      this.settles.emit(key, true);
    } catch (error) {
      Object.assign(entry, { state: 'failed', error: (error as Error).message });
      if (retries(error, attempt) && !this.closing) {
        const timer = setTimeout(() => {
          this.retries.delete(timer);
          this.schedule(key, entry, 0, attempt + 1);
        }, this.options.backoffMs ?? JOB_RETRY.backoffMs);
        timer.unref();
        this.retries.add(timer);
        return;
      }
      entry.body = undefined;
      this.options.onEvent?.('failed', 0);
      this.settles.emit(key, false);
    } finally {
      this.running.delete(controller);
    }
  }

  /**
   * Drops the oldest waiting jobs until one of `bytes` fits under `maxQueued` and `maxQueuedBytes`
   * (a slow summarizer must not pile up histories); false when it cannot fit at all.
   */
  private makeRoom(bytes: number): boolean {
    const maxCount = this.options.maxQueued ?? 16;
    const maxBytes = this.options.maxQueuedBytes ?? 48 * 1024 * 1024;
    if (bytes > maxBytes) return false;
    for (const key of this.waiting.keys()) {
      if (this.waiting.size < maxCount && this.waitingBytes + bytes <= maxBytes) break;
      this.drop(key, 'CMP_ERR_OVERLOADED');
    }
    return true;
  }

  /** A job dropped before it ran: its body released, its entry (if kept) failed with `error`, counted. */
  private drop(key: string, error: string): void {
    this.unwait(key);
    const entry = this.entries.get(key);
    if (entry) Object.assign(entry, { state: 'failed', error, body: undefined });
    this.options.onEvent?.('dropped', 0);
    this.settles.emit(key, false);
  }

  /** The job no longer waits for a slot (it runs, or was dropped); whether it was waiting. */
  private unwait(key: string): boolean {
    const bytes = this.waiting.get(key);
    if (bytes === undefined) return false;
    this.waiting.delete(key);
    this.waitingBytes -= bytes;
    return true;
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
      if (this.unwait(key)) this.options.onEvent?.('dropped', 0);
      e.body = undefined;
      this.entries.delete(key);
      this.settles.emit(key, false);
      if (e.scope === scope) mine--;
    }
  }
}
