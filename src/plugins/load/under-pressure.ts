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
 * dead one.
 */
export default fp<UnderPressureOptions>(
  async (app: FastifyInstance, options) => {
    if (options.maxEventLoopDelay <= 0) return;
    await app.register(underPressure, {
      maxEventLoopDelay: options.maxEventLoopDelay,
      retryAfter: 5,
      pressureHandler: (request, reply) => {
        if (!isApiRequest(request)) return;
        reply.header('retry-after', '5');
        throw new CompactorError('CMP_ERR_OVERLOADED', 'the service is saturated; retry in 5 s');
      },
    });
  },
  { name: 'load-under-pressure', dependencies: ['problem', 'guard'] },
);
