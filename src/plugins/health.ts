import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness from local state only: turned off when the process starts draining. */
    readiness: { ready: boolean };
  }
}

const Status = z.object({ status: z.string() }).meta({ id: 'HealthStatus' });

/** `/health/live` answers while the process runs; `/health/ready` turns 503 while draining. */
export default fp(
  async (app: FastifyInstance) => {
    app.decorate('readiness', { ready: true });
    app.get('/health/live', { schema: { tags: ['health'], response: { 200: Status } } }, async () => ({ status: 'ok' }));
    app.get(
      '/health/ready',
      { schema: { tags: ['health'], response: { 200: Status, 503: Status } } },
      async (_request, reply) => {
        if (!app.readiness.ready) return reply.code(503).send({ status: 'draining' });
        return { status: 'ready' };
      },
    );
  },
  { name: 'health' },
);
