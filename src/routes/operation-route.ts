import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { OPERATIONS, type OperationUrl } from '../operations.js';
import { failureError, RawBody } from '../plugins/offload.js';
import { Problem } from '../schemas/common.js';

export const PROBLEMS = { 400: Problem, 401: Problem, 413: Problem, 415: Problem, 429: Problem, 500: Problem, 503: Problem };
/** What a strategy that calls the summarizer may answer besides (its upstream's failures). */
export const SUMMARIZER_PROBLEMS = { 502: Problem, 504: Problem };
/** What a strategy that offloads originals to the store may answer besides: originals larger than its cap. */
export const STORE_PROBLEMS = { 507: Problem };

interface OperationRoute {
  url: OperationUrl;
  tags: string[];
  summary: string;
  description: string;
  /** Error statuses beyond `PROBLEMS` that this endpoint may answer. */
  problems?: Record<number, z.ZodType>;
}

/**
 * Registers one POST endpoint of `OPERATIONS`: its body and response schemas (for validation and
 * the OpenAPI document) and a handler that runs it in line, or, for a body the content-type parser
 * left raw because it is large, on a worker thread that parses, validates, runs and serializes it
 * the same way. What it did is left on the request (`report`) for the metrics and the log line.
 */
export function operationRoute(app: FastifyInstance, route: OperationRoute): void {
  const op = OPERATIONS[route.url];
  app.withTypeProvider<ZodTypeProvider>().post(
    route.url,
    {
      schema: {
        tags: route.tags,
        summary: route.summary,
        description: route.description,
        body: op.body,
        response: { 200: op.response, ...PROBLEMS, ...route.problems },
      },
    },
    async (request, reply) => {
      const body: unknown = request.body;
      if (body instanceof RawBody) {
        const result = await app.offload.run(route.url, body.bytes, request);
        if (!result.ok) throw failureError(result);
        request.report = result.report;
        return reply
          .type('application/json; charset=utf-8')
          .send(Buffer.from(result.payload.buffer, result.payload.byteOffset, result.payload.byteLength));
      }
      const outcome = await op.run(app.compactor, body as never, {
        signal: AbortSignal.timeout(app.deadlineMs),
        caller: app.compactor.caller(request.apiKeyDigest),
      });
      request.report = outcome.report;
      return outcome.value;
    },
  );
}
