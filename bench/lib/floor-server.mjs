/**
 * "The floor": a Fastify 5 server with one route that only parses the JSON body and returns it,
 * with the Compactor's body limit. Whatever the Compactor does beyond this is its own cost.
 * Env: PORT, HOST (default 127.0.0.1), COMPACTOR_BODY_LIMIT (default 32 MiB).
 */
import Fastify from 'fastify';

const app = Fastify({ bodyLimit: Number(process.env.COMPACTOR_BODY_LIMIT ?? 32 * 1024 * 1024) });
app.post('/echo', async (request) => request.body);
app.get('/health/live', async () => ({ status: 'ok' }));
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 8081) });
