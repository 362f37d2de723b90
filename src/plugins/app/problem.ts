import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { CompactorError, ERRORS, type ErrorCode, type FieldError, validationError } from '../../errors.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Fastify's own error codes, translated to ours. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'CMP_ERR_REQUEST_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'CMP_ERR_REQUEST_EMPTY_BODY',
  FST_ERR_CTP_INVALID_JSON_BODY: 'CMP_ERR_REQUEST_INVALID_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'CMP_ERR_REQUEST_MALFORMED',
  FST_ERR_VALIDATION: 'CMP_ERR_REQUEST_VALIDATION',
};

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
}

/**
 * When a retry may succeed, in seconds, for the 503s whose thrower does not say: every 503 the
 * service sends carries `retry-after`, which the typed client and most HTTP clients honour.
 */
const RETRY_AFTER: Partial<Record<ErrorCode, number>> = {
  CMP_ERR_STORE_UNAVAILABLE: 2,
  CMP_ERR_SUMMARIZER_UNAVAILABLE: 5,
  CMP_ERR_SERVICE_UNAVAILABLE: 1,
};

/** The RFC 9457 document for one of our codes. */
export function problemDocument(code: ErrorCode, detail: string, requestId: string, errors?: FieldError[]): ProblemDocument {
  const { status, title } = ERRORS[code];
  return {
    type: `urn:compactor:error:${code}`,
    title,
    status,
    detail,
    code,
    request_id: requestId,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

/**
 * Sends an RFC 9457 problem document for one of our codes, with `x-request-id` (also on the
 * paths Fastify takes before any hook runs) and, when a retry may succeed, `retry-after`.
 */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  errors?: FieldError[],
  retryAfterSeconds?: number,
): FastifyReply {
  const body = problemDocument(code, detail, String(request.id), errors);
  reply.header('x-request-id', request.id);
  const retryAfter = retryAfterSeconds ?? RETRY_AFTER[code];
  if (retryAfter !== undefined && !reply.hasHeader('retry-after')) reply.header('retry-after', String(retryAfter));
  return reply.code(body.status).type('application/problem+json').send(body);
}

interface Classified {
  code: ErrorCode;
  detail: string;
  errors?: FieldError[];
  retryAfterSeconds?: number;
}

function classify(error: FastifyError & { validation?: unknown }): Classified {
  if (error instanceof CompactorError) {
    return {
      code: error.code,
      detail: error.message,
      ...(error.errors ? { errors: error.errors } : {}),
      ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    };
  }
  if (hasZodFastifySchemaValidationErrors(error)) return classify(validationError(error.validation) as FastifyError);
  if (error instanceof SyntaxError && /prototype/i.test(error.message)) {
    return {
      code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
      detail: 'the body contains __proto__ or constructor.prototype, which are refused',
    };
  }
  const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (mapped) return { code: mapped, detail: error.message };
  if (error.statusCode === 408) return { code: 'CMP_ERR_REQUEST_TIMEOUT', detail: 'the request did not arrive in time' };
  if (error.statusCode === 503) return { code: 'CMP_ERR_SERVICE_UNAVAILABLE', detail: 'the service is not accepting requests' };
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return { code: 'CMP_ERR_REQUEST_VALIDATION', detail: error.message };
  }
  return { code: 'CMP_ERR_INTERNAL', detail: 'an internal error occurred; the request id identifies it in the logs' };
}

/**
 * Every error leaves as `application/problem+json` with a stable code. Client errors are logged
 * by code only (their messages can quote the request); shed requests as a warning by code;
 * internal errors are logged with their stack, and their details never reach the client.
 */
export default fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const problem = classify(error);
      request.problemCode = problem.code;
      const status = ERRORS[problem.code].status;
      // Shedding load, or refusing a request while draining, is the service working as designed:
      // a short warning, no stack (under overload, thousands of stack traces a second would add
      // to the load they report).
      if (problem.code === 'CMP_ERR_OVERLOADED' || problem.code === 'CMP_ERR_SERVICE_UNAVAILABLE')
        request.log.warn({ code: problem.code, status }, 'request shed');
      else if (status >= 500) request.log.error({ err: error, code: problem.code }, 'request failed');
      else request.log.info({ code: problem.code, status }, 'request rejected');
      return sendProblem(request, reply, problem.code, problem.detail, problem.errors, problem.retryAfterSeconds);
    });
    app.setNotFoundHandler((request, reply) => {
      const url = request.url.split('?')[0] ?? '/';
      const allowed = METHODS.filter((method) => app.hasRoute({ url, method }));
      if (allowed.length > 0) {
        reply.header('allow', allowed.join(', '));
        return sendProblem(
          request,
          reply,
          'CMP_ERR_METHOD_NOT_ALLOWED',
          `${request.method} is not allowed on ${url}; use ${allowed.join(' or ')}`,
        );
      }
      return sendProblem(request, reply, 'CMP_ERR_ROUTE_NOT_FOUND', `no endpoint ${request.method} ${url}`);
    });
  },
  { name: 'problem' },
);
