import { once } from 'node:events';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** A port on 127.0.0.1 that was free a moment ago (for a child process to listen on). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Listens on a free port of 127.0.0.1: the real server, for clients that speak real HTTP. */
export async function listen(app: FastifyInstance): Promise<{ base: string; port: number }> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { base: `http://127.0.0.1:${address.port}`, port: address.port };
}
