import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram } from 'prom-client';
import { CompactorError } from '../../errors.js';
import { isApiRequest } from '../app/guard.js';

interface Waiter {
  resolve: (waitedMs: number) => void;
  since: number;
  /** Requests ahead of it when it arrived. */
  ahead: number;
}

/**
 * Turns for the requests that do the work: one starts per event-loop iteration, in arrival order.
 *
 * Since libuv 1.45 (Node 20), a listening socket accepts one connection per event-loop iteration
 * (libuv#3696). When every request that is ready runs in the same iteration, an iteration under
 * load lasts (ready requests × CPU per request), and each new connection waits that long to be
 * accepted: with 64 clients connecting at once, the last ones waited over 10 s while the first
 * were answered in under a second. One turn per iteration keeps iterations short, so new
 * connections, health probes and metrics are served promptly, and work runs in the order it came.
 */
export class TurnQueue {
  private waiting: (Waiter | undefined)[] = [];
  private head = 0;
  private scheduled = false;
  /** Recent time per turn (EWMA): each served request's wait over the turns it waited for. */
  private perTurnMs = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Requests waiting for their turn. */
  get depth(): number {
    return this.waiting.length - this.head;
  }

  /** How long the oldest waiting request has waited, in ms (0 when none waits). */
  oldestWaitMs(): number {
    const oldest = this.waiting[this.head];
    return oldest ? this.now() - oldest.since : 0;
  }

  /**
   * How long a request arriving now would wait: the queue's length times the recent time per
   * turn, or the oldest request's wait so far, whichever is longer. The time per turn is measured
   * over each served request's whole wait, so one slow turn (a GC pause) barely moves it.
   */
  expectedWaitMs(): number {
    return Math.max(this.oldestWaitMs(), this.depth * this.perTurnMs);
  }

  /** Resolves on the caller's turn, with how long it waited (ms). */
  turn(): Promise<number> {
    return new Promise((resolve) => {
      this.waiting.push({ resolve, since: this.now(), ahead: this.depth });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // An immediate scheduled while immediates run waits for the next iteration: one turn each.
    setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.scheduled = false;
    const waiter = this.waiting[this.head];
    if (!waiter) return;
    this.waiting[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    const now = this.now();
    const perTurn = (now - waiter.since) / (waiter.ahead + 1);
    this.perTurnMs = this.perTurnMs === 0 ? perTurn : this.perTurnMs + 0.1 * (perTurn - this.perTurnMs);
    if (this.depth > 0) this.schedule();
    waiter.resolve(now - waiter.since);
  };
}

export interface QueueOptions {
  /** A request that would wait longer than this (ms) for its turn gets 503; 0: off. */
  maxWaitMs: number;
}

/**
 * Every `/v1/*` request waits for its turn (`TurnQueue`) after its body is parsed and validated;
 * health, metrics and docs do not. The queue is where saturation shows: when a new request would
 * wait longer than `maxWaitMs` (queue length × recent time per turn, or the oldest wait so far),
 * it is answered 503 `CMP_ERR_OVERLOADED` with `retry-after` (that wait, in seconds) before its
 * body is even parsed, rather than joining a queue it would time out in.
 */
export default fp<QueueOptions>(
  async (app: FastifyInstance, options) => {
    const turns = new TurnQueue();
    const registers = [app.metrics.registry];
    const wait = new Histogram({
      name: 'compactor_queue_wait_seconds',
      help: 'Time /v1 requests waited for their turn',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const abandoned = new Counter({
      name: 'compactor_queue_abandoned_total',
      help: '/v1 requests whose client disconnected while they waited for their turn (not run)',
      registers,
    });
    new Gauge({
      name: 'compactor_queue_depth',
      help: '/v1 requests waiting for their turn',
      registers,
      collect() {
        this.set(turns.depth);
      },
    });
    // Shed before the body is read: a request turned away costs no parsing.
    app.addHook('onRequest', async (request, reply) => {
      if (!isApiRequest(request)) return;
      const expected = turns.expectedWaitMs();
      if (options.maxWaitMs > 0 && expected > options.maxWaitMs) {
        const seconds = Math.min(60, Math.max(1, Math.ceil(expected / 1000)));
        reply.header('retry-after', String(seconds));
        throw new CompactorError(
          'CMP_ERR_OVERLOADED',
          `the service is saturated: a request would wait about ${Math.round(expected)} ms for its turn; retry in ${seconds} s`,
        );
      }
    });
    // Wait for the turn once the body is parsed and valid (a bad request is answered at once).
    app.addHook('preHandler', async (request, reply) => {
      if (!isApiRequest(request)) return;
      wait.observe((await turns.turn()) / 1000);
      if (request.raw.socket?.destroyed) {
        // The client gave up while it waited: nobody would read the answer, so no work is done.
        abandoned.inc();
        reply.code(499 as never);
        return reply.send();
      }
    });
  },
  { name: 'queue', dependencies: ['problem', 'metrics', 'guard'] },
);
