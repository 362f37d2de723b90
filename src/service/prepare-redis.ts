import type { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { CompactorError } from '../errors.js';
import type { Warning } from '../history/types.js';
import { type JobEvent, type JobQueue, type JobState, openBullJobQueue, retries } from '../jobs/index.js';
import type { PreparedContext, PrepareRequest } from '../strategies/types.js';
import type { Compactor } from './compactor.js';
import { summarizeFor } from './prepare.js';
import {
  bounded,
  CALL_TIMEOUT_MS,
  jobKey,
  openIndexClient,
  REDIS_TIMEOUT_MS,
  rangesKey,
  type Stored,
  stateOf,
  UNAVAILABLE,
} from './prepare-redis-index.js';
import { bodyOf, JOB_BODY_KIND, type QueuedJob } from './prepare-redis-job.js';
import {
  type PreparedSummaries,
  type PreparedView,
  type PrepareEvent,
  type PrepareOutcome,
  tokensOf,
  type Usage,
} from './prepared-summaries.js';
import { settledBy, settleSignals } from './settle.js';

export interface RedisPreparerOptions {
  /** `redis://…` or `rediss://…`: the store's Redis. */
  url: string;
  /** First part of the keys (BullMQ's prefix too): replicas that share prepared summaries share it. */
  prefix: string;
  /** Jobs this replica runs at once. */
  concurrency: number;
  byDefault: boolean;
  /** Ranges kept per caller, newest first: 32 by default. */
  perScope?: number;
  /** How long a caller's index and a finished job stay, seconds: a day by default. */
  ttlSeconds?: number;
  /**
   * BullMQ lock duration (`COMPACTOR_JOBS_LOCK_MS`; a dead replica's job is taken over once it
   * expires, found by a stalled check every half of it): 20,000 by default.
   */
  lockDurationMs?: number;
  onEvent?: (event: PrepareEvent, tokens: number) => void;
  onJob?: (event: JobEvent) => void;
  /** Redis and BullMQ errors (the index degrades to empty; the requests go on). */
  onError?: (error: unknown) => void;
}

/**
 * Prepared summaries shared by replicas through Redis (issue 22): the jobs run on BullMQ (any
 * replica runs one, once per range, a dead replica's job is taken over), and each caller's index
 * of ranges is one hash and one sorted set (`<prefix>:ranges:{<scope>}`, with `:order`), the newest
 * `perScope` kept, expiring a TTL after the last add. A range's state is its job's; it is billed
 * once across replicas: responses that splice it at the same moment (each read the index before
 * either reported back) claim it in the store, and only the first bills it; the counters count
 * it once, by the `b:` field the first report sets.
 */
export class RedisPreparer implements PreparedSummaries {
  private readonly perScope: number;
  private readonly ttlMs: number;

  private constructor(
    private readonly compactor: Compactor,
    private readonly redis: Redis,
    private readonly queue: JobQueue<QueuedJob, Usage>,
    private readonly options: RedisPreparerOptions,
    /** Jobs settled, on any replica (`settled`): this replica's worker, and the others' by pub/sub. */
    private readonly settles: EventEmitter,
    private readonly subscriber: Redis,
  ) {
    this.perScope = options.perScope ?? 32;
    this.ttlMs = (options.ttlSeconds ?? 24 * 3600) * 1000;
  }

  /**
   * Connects (in the background) and starts this replica's worker. A job that settles is signalled
   * to this replica's waiting fits at once and published on `<prefix>:prepared:settled` for the
   * other replicas' (pub/sub: a message lost while a subscriber reconnects costs a wait its `ms`).
   */
  static async open(compactor: Compactor, options: RedisPreparerOptions): Promise<RedisPreparer> {
    const onEvent = options.onEvent;
    const redis = openIndexClient(options.url, options.onError);
    const channel = `${options.prefix}:prepared:settled`;
    const settles = settleSignals();
    const subscriber = new Redis(options.url, {
      connectTimeout: REDIS_TIMEOUT_MS,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    subscriber.on('error', (error) => options.onError?.(error));
    subscriber.on('message', (_channel: string, message: string) => {
      const [key, ready] = JSON.parse(message) as [string, boolean];
      settles.emit(key, ready);
    });
    subscriber.subscribe(channel).catch((error: unknown) => options.onError?.(error));
    const settle = (key: string, ready: boolean) => {
      settles.emit(key, ready);
      redis.publish(channel, JSON.stringify([key, ready])).catch((error: unknown) => options.onError?.(error));
    };
    const queue = await openBullJobQueue<QueuedJob, Usage>({
      url: options.url,
      prefix: options.prefix,
      name: 'prepared',
      concurrency: options.concurrency,
      ttlSeconds: options.ttlSeconds ?? 24 * 3600,
      commandTimeoutMs: REDIS_TIMEOUT_MS,
      callTimeoutMs: CALL_TIMEOUT_MS,
      ...(options.lockDurationMs
        ? { lockDurationMs: options.lockDurationMs, stalledIntervalMs: Math.ceil(options.lockDurationMs / 2) }
        : {}),
      processor: async (job, context) => {
        try {
          const usage = await summarizeFor(compactor, await bodyOf(compactor, job), context.signal);
          onEvent?.('prepared', tokensOf(usage));
          settle(context.id, true);
          return usage;
        } catch (error) {
          onEvent?.('failed', 0);
          // The last attempt (JOB_RETRY): its waiting fits stop waiting.
          if (!retries(error, context.attempt)) settle(context.id, false);
          throw error;
        }
      },
      ...(options.onJob ? { listener: options.onJob } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
    return new RedisPreparer(compactor, redis, queue, options, settles, subscriber);
  }

  /** The caller's ranges; while Redis cannot answer (within the bound), none, and `unavailable` says why. */
  async context(scope: string): Promise<PreparedContext> {
    const byDefault = this.options.byDefault;
    try {
      const entries = await bounded('read', async () => {
        const ranges = await this.ranges(scope);
        const states = await Promise.all(ranges.map((r) => this.queue.state(jobKey(scope, r.id))));
        return ranges.map(({ created: _, billed, ...range }, i) => {
          const job = states[i];
          const usage = !billed && job?.state === 'ready' ? job.result : undefined;
          return { ...range, state: stateOf(job, billed), ...(usage ? { usage } : {}) };
        });
      });
      const settled = (id: string, ms: number, signal?: AbortSignal) => this.settled(scope, id, ms, signal);
      return { entries, byDefault, settled };
    } catch (error) {
      this.options.onError?.(error);
      return { entries: [], byDefault, unavailable: UNAVAILABLE };
    }
  }

  /** `PreparedContext.settled`: the job's settle signal (any replica's), its state read once. */
  settled(scope: string, id: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    const key = jobKey(scope, id);
    return settledBy(this.settles, key, ms, signal, async () => {
      const job = await this.queue.state(key);
      return job?.state === 'ready' ? true : !job || job.state === 'failed' ? false : undefined;
    });
  }

  async after(scope: string, outcome: PrepareOutcome): Promise<Warning[]> {
    try {
      await bounded('write', async () => {
        if (outcome.spliced) await this.bill(scope, outcome.spliced);
        if (outcome.prepare) await this.add(scope, outcome.prepare);
      });
      return [];
    } catch (error) {
      this.options.onError?.(error);
      if (!outcome.prepare) return [];
      const why = error instanceof CompactorError ? error.message : UNAVAILABLE;
      return [{ code: 'prepared_unavailable', message: `the summary asked for was not queued: ${why}` }];
    }
  }

  /** @throws CompactorError `CMP_ERR_STORE_UNAVAILABLE` (503) while Redis cannot answer */
  async view(scope: string, id: string): Promise<PreparedView | undefined> {
    let range: string | null | undefined;
    let billed: string | null | undefined;
    let job: JobState<Usage> | undefined;
    try {
      [range, billed, job] = await bounded('read', async () => {
        const [r, b] = await this.redis.hmget(rangesKey(this.options.prefix, scope), `r:${id}`, `b:${id}`);
        return [r, b, r ? await this.queue.state(jobKey(scope, id)) : undefined] as const;
      });
      if (!range) return undefined;
    } catch (error) {
      this.options.onError?.(error);
      throw new CompactorError('CMP_ERR_STORE_UNAVAILABLE', 'the redis store cannot answer for prepared summaries now', [], {
        retryAfterSeconds: 2,
      });
    }
    const stored = JSON.parse(range) as Stored;
    return {
      id,
      state: stateOf(job, billed !== null),
      covers: { from: stored.from, to: stored.to },
      usage: job?.result ?? null,
      created_at: new Date(stored.created).toISOString(),
      ...(job?.state === 'failed' && job.error ? { error: job.error } : {}),
    };
  }

  /** Rejects while jobs cannot be queued: the queue's connection is not set up, or Redis does not answer. */
  check(): Promise<void> {
    return this.queue.ping();
  }

  async close(deadlineMs?: number): Promise<void> {
    await this.queue.close(deadlineMs);
    // QUIT only to a Redis that answers (its command timeout bounds it); to one that is gone it would
    // wait in the offline queue while the client reconnects. `disconnect` then stops reconnecting.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => {});
    this.redis.disconnect();
    // A subscriber has nothing to flush, and a QUIT to a hung Redis would wait: just disconnect.
    this.subscriber.disconnect();
  }

  /** The caller's ranges, oldest first, with whether each was billed. */
  private async ranges(scope: string): Promise<(Stored & { billed: boolean })[]> {
    const fields = await this.redis.hgetall(rangesKey(this.options.prefix, scope));
    const out: (Stored & { billed: boolean })[] = [];
    for (const [field, value] of Object.entries(fields)) {
      if (!field.startsWith('r:')) continue;
      out.push({ ...(JSON.parse(value) as Stored), billed: `b:${field.slice(2)}` in fields });
    }
    // As the order set sorts them: by when added, then by id.
    return out.sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Queues the range's job (once: BullMQ dedupes its id) and adds it to the caller's index. */
  private async add(scope: string, request: PrepareRequest): Promise<void> {
    const key = rangesKey(this.options.prefix, scope);
    if (await this.redis.hexists(key, `r:${request.id}`)) return;
    const { body, id, prefix, from, to } = request;
    await this.queue.add(jobKey(scope, id), { scope, ref: await this.keep(scope, body) });
    const now = Date.now();
    const range = JSON.stringify({ id, prefix, from, to, created: now } satisfies Stored);
    const dropped = await this.redis.compactorPrepared(`${key}:order`, key, id, now, range, this.perScope, this.ttlMs);
    for (const old of dropped ?? []) {
      const job = await this.queue.state(jobKey(scope, old));
      if (job?.state === 'ready') this.options.onEvent?.('wasted', tokensOf(job.result));
    }
  }

  /**
   * Stores a job's `/v1/summarize` body (the history range) as one of the caller's artifacts: it
   * lives the artifacts' TTL and counts against the store's cap, and the job carries only its id.
   * @throws CompactorError as `ArtifactService.persist` does (store unavailable, over the cap)
   */
  private async keep(scope: string, body: Record<string, unknown>): Promise<string> {
    const caller = this.compactor.callerOfScope(scope);
    const content = JSON.stringify(body);
    const { id, sha256 } = caller.address(content);
    await this.compactor.artifacts.persist(caller, [{ id, kind: JOB_BODY_KIND, tool_name: null, content, sha256 }]);
    return id;
  }

  /** Bills a spliced range once across replicas: the first call counts it. */
  private async bill(scope: string, id: string): Promise<void> {
    const first = await this.redis.compactorBill(rangesKey(this.options.prefix, scope), id, Date.now());
    if (first !== 1) return;
    const job = await this.queue.state(jobKey(scope, id));
    this.options.onEvent?.('spliced', tokensOf(job?.result));
  }
}
