import { MessageChannel } from 'node:worker_threads';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import pTimeout from 'p-timeout';
import { Piscina } from 'piscina';
import { Gauge } from 'prom-client';
import type { Config } from '../../config.js';
import type { OperationUrl } from '../../service/operations.js';
import { serveSettled } from '../../service/settle.js';
import { serveWeigh } from '../../service/weigh-port.js';
import { serveStore } from '../../store/remote.js';
import type { PreparedContext } from '../../strategies/types.js';
import type { Task, TaskResult, WorkerInit } from '../../worker.js';
import { weightOf } from '../load/admission.js';
import { isApiRequest } from './guard.js';
import { failureError, workerFile } from './worker-task.js';

declare module 'fastify' {
  interface FastifyInstance {
    workerPool: WorkerPool;
  }
}

/**
 * How heavy a body the main thread takes on while every worker is busy (`WorkerPool.spares`), as a
 * multiple of `COMPACTOR_WORKER_MIN_BYTES`: at the default, 1 MiB of weight, tens of milliseconds of
 * the event loop at most, where liveness allows 100.
 */
export const SPARE_MAX_FACTOR = 4;

export interface WorkerPoolOptions {
  /** Worker threads; 0: every request runs on the main thread. */
  workers: number;
  /** Bodies of at least this many bytes run on a worker. */
  minBytes: number;
  config: Config;
  /** The summarizer's concurrency count, shared with the main thread. */
  summarizerSlots: Int32Array;
}

/**
 * Large requests run on a pool of worker threads (piscina), started on first use: the main thread
 * only receives the bytes and sends the answer back, so liveness probes, metrics and new
 * connections are served within milliseconds while a 30 MB history is worked on.
 */
export class WorkerPool {
  private pool: Piscina | undefined;
  /** The warm-up in progress (`warm()`), or undefined: never asked (the pool starts on first use). */
  private warming: Promise<void> | undefined;
  /** Whether the pool has run a task: readiness waits for it once a warm-up was asked for. */
  private started = false;
  /** Whether the warm-up failed (readiness says so). */
  failed = false;
  private closing = false;
  /** Body bytes of the tasks on the pool (running or waiting), and how many tasks. */
  private pendingBytes = 0;
  private pendingTasks = 0;
  /** Requests of a worker's weight the main thread runs itself (`spares`): one at a time. */
  private sparing = 0;
  /** Each admitted request's reply, while it is open: a spared request gives its turn back when it closes. */
  readonly replies = new WeakMap<FastifyRequest, FastifyReply>();
  /** Artifacts the workers' own store connections evicted (the main thread's metrics add them). */
  evicted = 0;
  /**
   * The pool's throughput in its current or last busy spell (body bytes finished per ms); until
   * measured, 2 MB/s, about what one thread does counting a history with nothing cached.
   */
  private bytesPerMs = 2000;
  /** When the pool last went from idle to busy (performance.now()), and the bytes it finished since. */
  private busySince = 0;
  private doneSinceBusy = 0;

  constructor(
    private readonly options: WorkerPoolOptions,
    private readonly app: FastifyInstance,
  ) {}

  /** Body bytes of the tasks on the pool. */
  get pending(): number {
    return this.pendingBytes;
  }

  /**
   * How long a task arriving now would wait for the pool to get to it: the bytes ahead of it at the
   * pool's recent speed (`plugins/load/pool-shedding.ts` sheds by it).
   */
  expectedWaitMs(): number {
    return this.pendingBytes / this.bytesPerMs;
  }

  /**
   * Whether the pool is up, as readiness sees it: no workers, or no warm-up asked for (an app built
   * without the server's boot starts its pool on first use), or the warm-up finished.
   */
  get up(): boolean {
    return this.options.workers === 0 || this.warming === undefined || this.started;
  }

  /** Whether a body of `bytes` runs on a worker. */
  accepts(bytes: number): boolean {
    return this.options.workers > 0 && bytes >= this.options.minBytes;
  }

  /**
   * The one rule for where a request's work runs, for every caller (`/v1` bodies, the proxy's fit):
   * on a worker when its weight reaches the threshold — its bytes, or the weight admission counted
   * for it (messages and objects: 250 kB of tiny messages is 8,000 of them to parse and rewrite).
   */
  takes(request: FastifyRequest, bytes: number): boolean {
    return this.accepts(Math.max(bytes, weightOf(request)));
  }

  /**
   * Whether a `/v1` body that `takes` gives a worker runs on the main thread instead: when every
   * worker already has a task and the main thread runs no other such request, for a body of at most
   * `SPARE_MAX_FACTOR` times the threshold. With one worker (two cores) the worker was the bottleneck
   * while the main thread idled (issue 40): the main thread now takes every other heavy request
   * while it waits. Given back when its answer is sent or its client leaves.
   */
  spares(request: FastifyRequest, bytes: number): boolean {
    const weight = Math.max(bytes, weightOf(request));
    const reply = this.replies.get(request);
    if (!reply || this.sparing > 0 || this.pendingTasks < this.options.workers) return false;
    if (weight > SPARE_MAX_FACTOR * this.options.minBytes) return false;
    this.sparing++;
    reply.raw.once('close', () => {
      this.sparing--;
    });
    return true;
  }

  private start(): Piscina {
    const init: WorkerInit = {
      config: this.options.config,
      secret: this.app.artifactSecret,
      remoteStore: this.app.storeIsLocal,
      summarizerSlots: this.options.summarizerSlots,
    };
    this.pool = new Piscina({
      filename: workerFile(),
      minThreads: this.options.workers,
      maxThreads: this.options.workers,
      idleTimeout: Number.POSITIVE_INFINITY,
      // Summaries wait on the LLM: a worker takes more tasks while one waits.
      concurrentTasksPerWorker: 4,
      workerData: init,
    });
    return this.pool;
  }

  /** Whether the pool has threads at all (`COMPACTOR_WORKERS` above 0). */
  get available(): boolean {
    return this.options.workers > 0;
  }

  /**
   * Runs one request on the pool; the body is moved to the worker, not copied. `keyDigest`: the
   * caller's, where it is not the request's validated key (a proxied request's credential).
   * `weigh`: where the worker's `Call.weigh` is counted (an MCP read's originals).
   */
  async run(
    url: OperationUrl,
    body: Buffer,
    request: FastifyRequest,
    prepared?: PreparedContext,
    keyDigest?: Uint8Array | null,
    weigh?: (chars: number) => void,
  ): Promise<TaskResult> {
    const pool = this.pool ?? this.start();
    const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    const movable = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? bytes : new Uint8Array(bytes);
    const task: Task = {
      url,
      body: movable,
      keyDigest: keyDigest !== undefined ? keyDigest : request.apiKeyDigest ? new Uint8Array(request.apiKeyDigest) : null,
      deadlineMs: this.app.deadlineMs,
      requestId: String(request.id),
    };
    const transferList: (ArrayBuffer | import('node:worker_threads').MessagePort)[] = [movable.buffer as ArrayBuffer];
    const channel = this.app.storeIsLocal ? new MessageChannel() : undefined;
    if (channel) {
      serveStore(channel.port1, this.app.store);
      task.port = channel.port2;
      transferList.push(channel.port2);
    }
    // A function does not cross threads: the worker asks for `settled` over a port of its own.
    const { settled, ...plain } = prepared ?? {};
    if (prepared) task.prepared = plain as PreparedContext;
    const waits = settled && new MessageChannel();
    if (waits) {
      serveSettled(waits.port1, settled);
      task.settledPort = waits.port2;
      transferList.push(waits.port2);
    }
    const weighs = weigh && new MessageChannel();
    if (weighs) {
      serveWeigh(weighs.port1, weigh);
      task.weighPort = weighs.port2;
      transferList.push(weighs.port2);
    }
    // The body's memory moves to the worker: its length is read now, while it is still here.
    const length = body.byteLength;
    if (this.pendingBytes === 0) {
      this.busySince = performance.now();
      this.doneSinceBusy = 0;
    }
    this.pendingBytes += length;
    this.pendingTasks++;
    try {
      const result = (await pool.run(task, { transferList })) as TaskResult;
      this.evicted += result.evicted;
      // Throughput: bytes finished over the time the pool has been busy (tasks on one worker
      // interleave, so a task's own duration says little about the pool's speed). An MCP read
      // (a few bytes of arguments, megabytes read from the store) says nothing of it.
      if (weigh) return result;
      this.doneSinceBusy += length;
      const span = performance.now() - this.busySince;
      if (span >= 20) this.bytesPerMs = this.doneSinceBusy / span;
      return result;
    } finally {
      this.pendingBytes -= length;
      this.pendingTasks--;
      channel?.port1.close();
      waits?.port1.close();
      weighs?.port1.close();
    }
  }

  /**
   * Starts the pool and runs one small request on it, so the first large request does not pay for
   * starting a thread and loading the tokenizer (seconds). The server calls it once it listens;
   * readiness answers 503 `starting` until it is done. A close during the warm-up ends it quietly.
   */
  warm(): Promise<void> {
    if (this.options.workers === 0 || this.closing) return Promise.resolve();
    this.warming ??= this.warmUp().catch((error: unknown) => {
      if (this.closing) return;
      this.failed = true;
      throw error;
    });
    return this.warming;
  }

  private async warmUp(): Promise<void> {
    const body = Buffer.from(JSON.stringify({ messages: [{ role: 'user', content: 'warm up' }] }));
    const result = await (this.pool ?? this.start()).run({
      url: '/v1/tokens',
      body: new Uint8Array(body),
      keyDigest: null,
      deadlineMs: 60_000,
      requestId: 'warm-up',
    } satisfies Task);
    if (!(result as TaskResult).ok) throw failureError(result as Extract<TaskResult, { ok: false }>);
    this.started = true;
  }

  /**
   * Stops the pool. A warm-up still starting its thread is let finish first (up to 10 s): a pool
   * destroyed while its worker boots fails that worker mid-start.
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.warming && !this.started) {
      await pTimeout(
        this.warming.catch(() => {}),
        { milliseconds: 10_000, message: false },
      );
    }
    await this.pool?.destroy();
  }
}

/**
 * Decorates the app with the worker pool (closed with the app); `plugins/load/pool-shedding.ts`
 * sheds what would wait on it.
 */
export default fp<WorkerPoolOptions>(
  async (app: FastifyInstance, options) => {
    const pool = new WorkerPool(options, app);
    app.decorate('workerPool', pool);
    new Gauge({
      name: 'compactor_worker_pending_bytes',
      help: 'Body bytes of the requests running or waiting on the worker pool',
      registers: [app.metrics.registry],
      collect() {
        this.set(pool.pending);
      },
    });
    // The reply of each admitted request, for the main thread to give back a turn it took (`spares`).
    app.addHook('onRequest', async (request, reply) => {
      if (isApiRequest(request)) pool.replies.set(request, reply);
    });
    app.addHook('onClose', async () => pool.close());
  },
  { name: 'worker-pool', dependencies: ['compactor', 'metrics'] },
);
