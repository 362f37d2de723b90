import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { CompactorError } from '../../errors.js';
import { isApiRequest } from '../app/guard.js';

export interface UnderPressureOptions {
  /** Event-loop delay (ms) above which `/v1` requests get 503 with retry-after; 0: off. */
  maxEventLoopDelay: number;
}

/**
 * `@fastify/under-pressure`, for `/v1` requests only: past the event-loop delay limit the service
 * answers 503 `CMP_ERR_OVERLOADED` with `retry-after: 5` rather than queueing until everything
 * times out. Liveness, readiness, metrics and docs keep answering: a saturated sidecar is not a
 * dead one. A request is shed only while other `/v1` requests are in flight: a lag with nothing of
 * ours to wait behind is the machine's (busy starting up, other processes), and shedding the one
 * request there is would not shorten it (issue 39: a sidecar's first request after boot, on a busy
 * machine, was shed three times of three).
 */
export default fp<UnderPressureOptions>(
  async (app: FastifyInstance, options) => {
    if (options.maxEventLoopDelay <= 0) return;
    /** `/v1` requests admitted past this check and not answered yet. */
    let inflight = 0;
    await app.register(underPressure, {
      maxEventLoopDelay: options.maxEventLoopDelay,
      retryAfter: 5,
      pressureHandler: (request, reply) => {
        if (!isApiRequest(request) || inflight === 0) return;
        reply.header('retry-after', '5');
        throw new CompactorError('CMP_ERR_OVERLOADED', 'the service is saturated; retry in 5 s');
      },
    });
    // After under-pressure's own hook: a request it sheds is never counted.
    app.addHook('onRequest', async (request, reply) => {
      if (!isApiRequest(request)) return;
      inflight++;
      reply.raw.once('close', () => {
        inflight--;
      });
    });
  },
  { name: 'load-under-pressure', dependencies: ['problem', 'guard'] },
);
