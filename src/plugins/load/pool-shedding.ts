import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CompactorError } from '../../errors.js';
import { isApiRequest } from '../app/guard.js';
import { weightOf } from './admission.js';
import { meter } from './body-meter.js';

export interface PoolSheddingOptions {
  /** A request that would wait longer than this (ms) for a worker gets 503; 0: off. */
  maxWaitMs: number;
}

/**
 * A request bound for the worker pool that would wait past the queue limit there is shed before
 * its body is read, as the main thread's turns shed theirs (queue.ts): 503 `CMP_ERR_OVERLOADED`
 * with `retry-after`, the pool's expected wait (its pending bytes at its recent speed). A chunked
 * one, or one light in bytes but heavy in messages (admission weighs it first), is checked as
 * soon as its bytes or weight reach the pool's threshold.
 */
export default fp<PoolSheddingOptions>(
  async (app: FastifyInstance, options) => {
    const pool = app.workerPool;
    const shed = (reply: FastifyReply): void => {
      const expected = pool.expectedWaitMs();
      if (expected <= options.maxWaitMs) return;
      const seconds = Math.min(60, Math.max(1, Math.ceil(expected / 1000)));
      reply.header('retry-after', String(seconds));
      throw new CompactorError(
        'CMP_ERR_OVERLOADED',
        `the service is saturated: a large request would wait about ${Math.round(expected)} ms for a worker thread; retry in ${seconds} s`,
      );
    };
    const applies = (request: FastifyRequest) => options.maxWaitMs > 0 && isApiRequest(request);
    app.addHook('onRequest', async (request, reply) => {
      if (!applies(request) || !pool.accepts(Number(request.headers['content-length'] ?? 0))) return;
      shed(reply);
    });
    app.addHook('preParsing', async (request, reply, payload) => {
      if (!applies(request)) return payload;
      let bytes = 0;
      let bound = pool.accepts(Number(request.headers['content-length'] ?? 0));
      return meter(payload, (chunk) => {
        bytes += chunk.length;
        if (bound || !pool.accepts(Math.max(bytes, weightOf(request)))) return;
        bound = true;
        shed(reply);
      });
    });
  },
  { name: 'pool-shedding', dependencies: ['worker-pool', 'guard', 'admission'] },
);
