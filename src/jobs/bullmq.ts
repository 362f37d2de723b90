import { randomUUID } from 'node:crypto';
import { type Job, Queue, UnrecoverableError, WaitingError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { type BullJobQueueOptions, bullDefaults, bullJobId, type Envelope, messageOf, stateOf, tell } from './bullmq-options.js';
import {
  type JobClock,
  type JobQueue,
  JobQueueClosedError,
  JobQueueUnavailableError,
  type JobState,
  PermanentJobError,
  systemClock,
} from './types.js';

/** How long each Redis-side step of `close` may take after the jobs' deadline (Redis may be down). */
const CLOSE_GRACE_MS = 2000;

/**
 * Jobs on BullMQ, shared by every replica that uses the same Redis, prefix and name. BullMQ does
 * the distributed part: a job id is added once (an `add` of an id that exists is a no-op), any
 * replica's worker runs it, a failed attempt is retried after an exponential backoff, a job whose
 * replica died (its lock expired) is moved back to wait by another replica's stalled check and run
 * there, and a finished job stays readable for `ttlSeconds`. Nothing is kept in the process: a new
 * queue object (a restarted replica) reads every job the old one added.
 *
 * Connections: one for adding and reading (commands fail after one reconnection attempt, so a
 * request is not held while Redis is down; replaced when its setup failed, see `openCommands`),
 * one for the worker, which BullMQ duplicates for its blocking reads (those need
 * `maxRetriesPerRequest: null`).
 *
 * `close` stops fetching jobs and lets running ones finish until the deadline; a job still running
 * then is moved back to wait (its processor's signal aborted) so that another replica runs it at
 * once; if even that fails, its lock expires and the stalled check hands it over. No job is lost.
 * With Redis unreachable or hung, `add` and `state` reject (`JobQueueUnavailableError`, or the
 * connection's error) within `callTimeoutMs` (each command within `commandTimeoutMs`), and
 * `close` gives up on each Redis step after 2 s: it resolves within its deadline and 4 s.
 */
export class BullJobQueue<Data, Result> implements JobQueue<Data, Result> {
  /** The queue and its commands connection: replaced when that connection's first steps failed. */
  private commands: Commands<Data, Result>;
  private readonly worker: Worker<Envelope<Data>, Result> | undefined;
  private readonly blocking: Redis;
  private readonly aborted = new AbortController();
  private readonly clock: JobClock;
  private closing: Promise<void> | undefined;
  /** The bound on one command of `add` and `state` (`commandTimeoutMs`), and on each call (`callTimeoutMs`). */
  private readonly timeoutMs: number;
  private readonly callTimeoutMs: number;

  /** @throws RangeError for a concurrency, attempts or TTL that is not a positive integer; TypeError for a bad URL */
  constructor(private readonly options: BullJobQueueOptions<Data, Result>) {
    for (const [name, value] of Object.entries({
      concurrency: options.concurrency,
      attempts: options.attempts ?? bullDefaults.attempts,
      ttlSeconds: options.ttlSeconds,
    })) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
    }
    this.clock = options.clock ?? systemClock;
    this.timeoutMs = options.commandTimeoutMs ?? bullDefaults.commandTimeoutMs;
    this.callTimeoutMs = options.callTimeoutMs ?? bullDefaults.callTimeoutMs;
    const prefix = options.prefix ?? bullDefaults.prefix;
    const name = options.name ?? bullDefaults.name;
    this.commands = this.openCommands();
    // The blocking reads wait on purpose (no command timeout, no retry limit): a Redis down or
    // paused at boot only delays the worker's first steps, which it completes once Redis answers.
    this.blocking = new Redis(options.url, { ...options.redisOptions, maxRetriesPerRequest: null });
    this.blocking.on('error', (error: unknown) => options.onError?.(error));
    this.worker = options.work === false ? undefined : this.work(name, prefix, this.blocking);
  }

  /**
   * The connection for adding and reading, and its queue. Only it has a command timeout, so that
   * a request is never held. BullMQ sets a connection up once (its scripts, Redis's version): when
   * that fails (Redis down, or too slow to answer at boot, issue 39), every later call on the queue
   * fails with it, forever; so a failed one is marked, and replaced by the next call (`current`).
   */
  private openCommands(): Commands<Data, Result> {
    const o = this.options;
    const onError = (error: unknown): void => o.onError?.(error);
    const client = new Redis(o.url, { commandTimeout: this.timeoutMs, ...o.redisOptions, maxRetriesPerRequest: 1 });
    client.on('error', onError);
    const queue = new Queue<Envelope<Data>, Result>(o.name ?? bullDefaults.name, {
      connection: client,
      prefix: o.prefix ?? bullDefaults.prefix,
      skipWaitingForReady: true,
    });
    queue.on('error', onError);
    const commands: Commands<Data, Result> = { client, queue, failed: false };
    queue.waitUntilReady().catch(() => {
      commands.failed = true;
    });
    return commands;
  }

  /** The queue to use now: a new one when the current connection failed to set up. */
  private current(): Queue<Envelope<Data>, Result> {
    if (this.commands.failed && !this.closing) {
      const old = this.commands;
      this.commands = this.openCommands();
      old.queue.close().catch(() => {});
      old.client.disconnect();
    }
    return this.commands.queue;
  }

  /**
   * Whether jobs can be added and read now: the connection is set up and Redis answers a PING,
   * within `callTimeoutMs`; replaces a connection that failed to set up (readiness calls it).
   * @throws the connection's error, or `JobQueueUnavailableError` past the bound
   */
  async ping(): Promise<void> {
    if (this.closing) throw new JobQueueClosedError();
    await this.bounded('ping', async () => {
      const queue = this.current();
      await queue.waitUntilReady();
      await this.commands.client.ping();
    });
  }

  async add(id: string, data: Data): Promise<JobState<Result>> {
    if (this.closing) throw new JobQueueClosedError();
    const nonce = randomUUID();
    const jobId = bullJobId(id);
    const o = this.options;
    const age = { age: o.ttlSeconds };
    await this.bounded('add', () =>
      this.current().add(
        'job',
        { id, data, nonce },
        {
          jobId,
          attempts: o.attempts ?? bullDefaults.attempts,
          backoff: { type: 'exponential', delay: o.backoffMs ?? bullDefaults.backoffMs },
          removeOnComplete: age,
          removeOnFail: age,
        },
      ),
    );
    const [job, state] = await this.read(jobId);
    tell(o.listener, job?.data.nonce === nonce ? 'added' : 'deduped');
    // Gone already: it finished and aged out; report it as the add saw it.
    return state ?? { state: 'started', attempts: 0, created_at: this.clock.now() };
  }

  async state(id: string): Promise<JobState<Result> | undefined> {
    return (await this.read(bullJobId(id)))[1];
  }

  /**
   * The job and its state. Two reads, so the state is read first: the job read after it is at
   * least as new (a `failed` state then always finds its error, a `ready` one its result).
   */
  private read(jobId: string): Promise<[Job<Envelope<Data>, Result> | undefined, JobState<Result> | undefined]> {
    return this.bounded('read', async () => {
      const queue = this.current();
      const bullState = await queue.getJobState(jobId);
      const job = await queue.getJob(jobId);
      return [job, job ? stateOf(job, bullState) : undefined];
    });
  }

  /**
   * `op` within `callTimeoutMs`, else a rejection: BullMQ may send several commands for one call, or
   * wait for its connection first, and a hung Redis answers none of them.
   */
  private async bounded<T>(what: string, op: () => Promise<T>): Promise<T> {
    let cancel = (): void => {};
    const late = new Promise<never>((_, reject) => {
      cancel = this.clock.after(this.callTimeoutMs, () =>
        reject(new JobQueueUnavailableError(`the job queue's ${what} got no answer from Redis within ${this.callTimeoutMs} ms`)),
      );
    });
    try {
      return await Promise.race([op(), late]);
    } finally {
      cancel();
    }
  }

  close(deadlineMs = this.options.closeDeadlineMs ?? bullDefaults.closeDeadlineMs): Promise<void> {
    this.closing ??= this.shutdown(deadlineMs);
    return this.closing;
  }

  private work(name: string, prefix: string, connection: Redis): Worker<Envelope<Data>, Result> {
    const o = this.options;
    const worker = new Worker<Envelope<Data>, Result>(name, (job, token, signal) => this.run(job, token, signal), {
      connection,
      prefix,
      concurrency: o.concurrency,
      lockDuration: o.lockDurationMs ?? bullDefaults.lockDurationMs,
      stalledInterval: o.stalledIntervalMs ?? bullDefaults.stalledIntervalMs,
      maxStalledCount: o.maxStalledCount ?? bullDefaults.maxStalledCount,
    });
    worker.on('error', (error) => o.onError?.(error));
    worker.on('active', () => tell(o.listener, 'started'));
    worker.on('completed', () => tell(o.listener, 'completed'));
    worker.on('stalled', () => tell(o.listener, 'stalled'));
    // A lock this replica could not renew is gone (expired, or taken over): stop spending on the job.
    worker.on('lockRenewalFailed', (jobIds) => {
      for (const jobId of jobIds) worker.cancelJob(jobId, 'the job lock was lost');
    });
    worker.on('failed', (job, error) => {
      if (error instanceof WaitingError) return;
      // A job BullMQ finished is failed for good; one it did not will run again.
      tell(o.listener, job?.finishedOn ? 'failed' : 'retried');
    });
    return worker;
  }

  /**
   * Runs one attempt; at the close deadline it gives the job back to the queue instead. A job
   * fetched after that is given back at once: giving one back wakes this worker's own blocking
   * fetch, which BullMQ does not stop from moving the job to active again while it closes.
   */
  private async run(
    job: Job<Envelope<Data>, Result>,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Result> {
    if (this.aborted.signal.aborted) return this.handBack(job, token);
    const stop = signal ? AbortSignal.any([signal, this.aborted.signal]) : this.aborted.signal;
    const { id, data } = job.data;
    const work = this.options.processor(data, { id, signal: stop, attempt: job.attemptsStarted });
    let giveBack = (): void => {};
    const closed = new Promise<'closed'>((resolve) => {
      giveBack = () => resolve('closed');
      this.aborted.signal.addEventListener('abort', giveBack, { once: true });
    });
    try {
      const outcome = await Promise.race([work, closed]);
      if (outcome !== 'closed') return outcome;
      work.catch(() => {}); // its signal is aborted; whatever it does now is not recorded
      return await this.handBack(job, token);
    } catch (error) {
      if (error instanceof PermanentJobError) throw new UnrecoverableError(messageOf(error));
      throw error;
    } finally {
      this.aborted.signal.removeEventListener('abort', giveBack);
    }
  }

  /** Moves the job back to wait, for any replica; BullMQ then leaves it alone (`WaitingError`). */
  private async handBack(job: Job<Envelope<Data>, Result>, token: string | undefined): Promise<never> {
    await job.moveToWait(token);
    throw new WaitingError();
  }

  private async shutdown(deadlineMs: number): Promise<void> {
    // Redis gone (not ready after two turns, as a socket's `close` comes in the close phase): an unforced
    // close waits for an `end` a reconnecting client never emits (issue 36). Jobs give themselves back.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    const gone = this.blocking.status !== 'ready';
    if (gone) this.aborted.abort(new JobQueueClosedError());
    const closing = this.worker?.close(gone);
    if (closing && !(await this.within(closing, deadlineMs))) {
      // Deadline: running jobs give themselves back to the queue (see `run`), then the worker ends.
      this.aborted.abort(new JobQueueClosedError());
      await this.within(closing, CLOSE_GRACE_MS);
    }
    await this.within(this.commands.queue.close(), CLOSE_GRACE_MS);
    const clients = [this.commands.client, this.blocking];
    const quits = clients.map((client) => (client.status === 'ready' ? client.quit() : undefined));
    await this.within(Promise.allSettled(quits), CLOSE_GRACE_MS);
    for (const client of clients) client.disconnect();
  }

  /** Whether `work` settled within `ms` (BullMQ's closing waits for Redis without a bound of its own). */
  private async within(work: Promise<unknown>, ms: number): Promise<boolean> {
    let cancel = (): void => {};
    const late = new Promise<boolean>((resolve) => {
      cancel = this.clock.after(ms, () => resolve(false));
    });
    const done = work.then(
      () => true,
      (error: unknown) => {
        this.options.onError?.(error);
        return true;
      },
    );
    try {
      return await Promise.race([done, late]);
    } finally {
      cancel();
    }
  }
}

/** The connection for adding and reading jobs, its queue, and whether its setup failed. */
interface Commands<Data, Result> {
  readonly client: Redis;
  readonly queue: Queue<Envelope<Data>, Result>;
  failed: boolean;
}
