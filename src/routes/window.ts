import type { FastifyInstance } from 'fastify';
import { OPERATIONS } from '../service/operations.js';
import { operationRoute } from './operation-route.js';

/** `POST /v1/window`: the sliding window. */
export default async function windowRoute(app: FastifyInstance): Promise<void> {
  operationRoute(app, OPERATIONS['/v1/window'], {
    tags: ['strategies'],
    summary: 'Sliding window: keep the newest runs, messages or tokens',
    description:
      'Keeps the head (leading system messages), the first user message (unless `keep_first_user` is false) and the newest `keep` runs, messages or tokens; drops the rest. The cut moves back to the nearest safe boundary (never inside a tool exchange, never below the newest group, never where the format would reject the seam). `{runs: 0}` still keeps the run in flight. Never calls an LLM.',
  });
}
