import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { failureError, RawBody } from '../plugins/app/worker-task.js';
import { reserveMore } from '../plugins/load/admission.js';
import { Problem } from '../schemas/common.js';
import type { Operation, OperationUrl } from '../service/operations.js';

export const PROBLEMS = { 400: Problem, 401: Problem, 413: Problem, 415: Problem, 429: Problem, 500: Problem, 503: Problem };
/** What a strategy that calls the summarizer may answer besides (its upstream's failures). */
export const SUMMARIZER_PROBLEMS = { 502: Problem, 504: Problem };
/** What a strategy that offloads originals to the store may answer besides: originals larger than its cap. */
export const STORE_PROBLEMS = { 507: Problem };

/** How a POST endpoint describes itself in the OpenAPI document. */
export interface RouteDocs {
  tags: string[];
  summary: string;
  description: string;
  /** Error statuses beyond `PROBLEMS` that this endpoint may answer. */
  problems?: Record<number, z.ZodType>;
}

/**
 * Registers one operation as a POST endpoint: its body and response schemas (the OpenAPI
 * document; the body is checked by the operation itself, before the request waits for its turn)
 * and a handler that runs the checked body in line, or, for a body the content-type parser left
 * raw because it is large, on a worker thread that parses, checks, runs and serializes it the
 * same way. What it did is left on the request (`report`) for the metrics and the log line.
 */
export function operationRoute<Body extends z.ZodType, Response extends z.ZodType>(
  app: FastifyInstance,
  op: Operation<Body, Response, OperationUrl>,
  docs: RouteDocs,
): void {
  const { tags, summary, description, problems } = docs;
  const checked = new WeakMap<FastifyRequest, z.output<Body>>();
  app.post(op.url, {
    schema: { tags, summary, description, body: op.body, response: { 200: op.response, ...PROBLEMS, ...problems } },
    preValidation: async (request) => {
      if (!(request.body instanceof RawBody)) checked.set(request, op.check(request.body));
    },
    handler: async (request, reply) => {
      const { body } = request;
      const caller = app.compactor.caller(request.apiKeyDigest);
      if (body instanceof RawBody) {
        const result = await op.around(app.preparer, caller.scope, undefined, async (prepared) => {
          const done = await app.workerPool.run(op.url, body.bytes, request, prepared);
          if (!done.ok) throw failureError(done);
          request.report = done.report;
          return done;
        });
        return reply
          .type('application/json; charset=utf-8')
          .send(Buffer.from(result.payload.buffer, result.payload.byteOffset, result.payload.byteLength));
      }
      // Checked in preValidation (a body object is never undefined).
      const input = checked.get(request) ?? op.check(body);
      const outcome = await op.around(app.preparer, caller.scope, input, async (prepared) => {
        const done = await op.run(app.compactor, input, {
          signal: AbortSignal.timeout(app.deadlineMs),
          caller,
          prepared,
          reserve: (bytes) => reserveMore(request, bytes),
        });
        request.report = done.report;
        return done;
      });
      return outcome.value;
    },
  });
}
