import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { CompactorError } from '../../errors.js';
import { StoreHealth } from '../../store/health.js';
import { CachedCheck } from './ready-check.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness from local state only: turned off when the process starts draining. */
    readiness: { ready: boolean };
  }
}

const Status = z
  .object({
    status: z.string().meta({
      description: '`ok`, `ready`, `starting`, `draining`, `store_unavailable`, `store_failed` or `prepared_unavailable`',
    }),
    reason: z.string().optional().meta({ description: 'Why the service is not ready (never content, never a path)' }),
  })
  .meta({ id: 'HealthStatus', description: 'The service is up (`ok`) or ready to serve (`ready`).' });

/**
 * `/health/live` answers while the process runs. `/health/ready` answers from local state only
 * (never the summarizer's health): 503 `draining` once shutdown starts, 503 `starting` until the
 * worker pool the server warms at boot is up, 503 `store_unavailable`
 * or `store_failed` with a reason while the artifact store does not take writes (a small write,
 * its answer reused for 1.5 s, never awaited past 1 s), 503 `prepared_unavailable` while shared
 * prepared summaries cannot be queued (their queue's Redis connection is not set up or does not
 * answer a PING; checked and reused the same way; issue 39), else 200 `ready`. Once `close()` starts,
 * other requests that still arrive on open connections get 503 `CMP_ERR_SERVICE_UNAVAILABLE`
 * with `connection: close` (Fastify's own 503 is plain JSON); health keeps answering.
 */
export default fp(
  async (app: FastifyInstance) => {
    app.decorate('readiness', { ready: true });
    const store = new StoreHealth(app.store);
    const check = app.preparer.check?.bind(app.preparer);
    const prepared = check ? new CachedCheck("the prepared summaries' Redis", check) : undefined;
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
      app.readiness.ready = false;
    });
    app.addHook('onRequest', async (request, reply) => {
      if (!closing || request.routeOptions.url?.startsWith('/health/')) return;
      reply.header('connection', 'close');
      throw new CompactorError(
        'CMP_ERR_SERVICE_UNAVAILABLE',
        'the service is shutting down; send the request to another instance',
      );
    });
    app.get('/health/live', { schema: { tags: ['health'], response: { 200: Status } } }, async () => ({ status: 'ok' }));
    app.get(
      '/health/ready',
      { schema: { tags: ['health'], response: { 200: Status, 503: Status } } },
      async (_request, reply) => {
        if (!app.readiness.ready) return reply.code(503).send({ status: 'draining' });
        if (!app.workerPool.up) {
          const reason = app.workerPool.failed ? 'the worker pool did not start' : 'the worker pool is starting';
          return reply.code(503).send({ status: 'starting', reason });
        }
        const state = await store.check();
        if (!state.ok) return reply.code(503).send({ status: state.status, reason: state.reason });
        const jobs = await prepared?.state();
        if (jobs && !jobs.ok) return reply.code(503).send({ status: 'prepared_unavailable', reason: jobs.reason });
        return { status: 'ready' };
      },
    );
  },
  { name: 'health', dependencies: ['compactor', 'worker-pool', 'prepare'] },
);
