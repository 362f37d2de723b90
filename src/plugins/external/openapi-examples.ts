import { readFileSync } from 'node:fs';
import type { ErrorCode } from '../../errors.js';
import { type Example, REQUEST_EXAMPLES } from '../../schemas/examples/requests.js';
import { problemDocument } from '../app/problem.js';

/**
 * What `npm run openapi` recorded from the app itself (`openapi/examples.json`): the answer to
 * each operation's first request example, by `METHOD path` and status, and the request examples
 * that are made from an answer (expand's input is a compaction's output).
 */
export interface RecordedExamples {
  responses: Record<string, Record<string, unknown>>;
  requests: Record<string, Record<string, Example>>;
}

/** `openapi/examples.json`, from `src/plugins` and `dist/plugins` alike. */
export const RECORDED_EXAMPLES = new URL('../../../openapi/examples.json', import.meta.url);

export function loadRecordedExamples(): RecordedExamples {
  try {
    return JSON.parse(readFileSync(RECORDED_EXAMPLES, 'utf8')) as RecordedExamples;
  } catch {
    return { responses: {}, requests: {} };
  }
}

interface ProblemAnswer {
  description: string;
  code: ErrorCode;
  detail: string;
  errors?: { path: string; message: string }[];
}

/** Every problem status the routes declare: what it means and a typical body. */
export const PROBLEMS: Readonly<Record<string, ProblemAnswer>> = {
  400: {
    description:
      "The request is not valid: the body does not match the schema, is not JSON, or the history breaks its format's rules (`code` says which, `errors` lists each field).",
    code: 'CMP_ERR_REQUEST_VALIDATION',
    detail: 'keep: give exactly one of runs, messages or tokens',
    errors: [{ path: 'keep', message: 'give exactly one of runs, messages or tokens' }],
  },
  401: {
    description: 'An API key is required, or the one sent is not valid (only when the service has `COMPACTOR_API_KEYS` set).',
    code: 'CMP_ERR_AUTH_REQUIRED',
    detail: 'send an API key as Authorization: Bearer <key>',
  },
  404: {
    description: 'No such artifact, or it has expired.',
    code: 'CMP_ERR_ARTIFACT_NOT_FOUND',
    detail: 'id: artifact "art_3f9a1c0d5e7b2a4c6d8e0f12" is unknown or has expired',
    errors: [{ path: 'id', message: 'artifact "art_3f9a1c0d5e7b2a4c6d8e0f12" is unknown or has expired' }],
  },
  413: {
    description: 'The body is larger than `COMPACTOR_BODY_LIMIT`.',
    code: 'CMP_ERR_REQUEST_BODY_TOO_LARGE',
    detail: 'the body is larger than 33554432 bytes',
  },
  415: {
    description: 'The body is not `application/json`.',
    code: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
    detail: 'content-type text/plain is not supported; send application/json',
  },
  429: {
    description: 'Too many requests from this key or address: retry after the `Retry-After` seconds.',
    code: 'CMP_ERR_RATE_LIMITED',
    detail: 'rate limit exceeded, retry in 12 seconds',
  },
  500: {
    description:
      'An internal error, or an artifact store that refuses to work until an operator fixes it; `request_id` finds it in the logs.',
    code: 'CMP_ERR_INTERNAL',
    detail: 'an internal error occurred; the request id identifies it in the logs',
  },
  502: {
    description: 'The summarizer answered with an error or an empty summary (with `on_failure: error`).',
    code: 'CMP_ERR_SUMMARIZER_UPSTREAM',
    detail: 'the summarizer answered 500 Internal Server Error',
  },
  503: {
    description:
      'Saturated, shutting down, or the store or the summarizer is unavailable for now: retry after the `Retry-After` seconds.',
    code: 'CMP_ERR_OVERLOADED',
    detail: 'the service is saturated; retry after 1 second',
  },
  504: {
    description: 'The summarizer did not answer in time (with `on_failure: error`).',
    code: 'CMP_ERR_SUMMARIZER_TIMEOUT',
    detail: 'the summarizer did not answer within 30000 ms',
  },
  507: {
    description: "The originals to offload are larger than the store's cap (`store: inline` or `none` avoids storing them).",
    code: 'CMP_ERR_STORE_ARTIFACT_TOO_LARGE',
    detail: 'the originals to offload take 70 MB, more than the cap of 64 MB',
  },
};

/** Responses whose description is not their schema's: a draining or failing readiness check. */
const DESCRIPTIONS: Record<string, string> = {
  'GET /health/ready 503': 'Not ready: draining for shutdown, or the store is unavailable or failing (`status`, `reason`).',
};

type Json = Record<string, unknown>;
interface Operation {
  requestBody?: { content: Record<string, Json> };
  responses: Record<string, { description: string; content?: Record<string, Json> }>;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Json> };
}

function schemaDescription(document: Document, media: Json | undefined): string | undefined {
  const ref = (media?.schema as Json | undefined)?.$ref;
  if (typeof ref !== 'string') return undefined;
  return document.components?.schemas?.[ref.split('/').pop() as string]?.description as string | undefined;
}

/**
 * Every response described (a problem status by what it means, any other by its schema) with an
 * example: a typical problem body, or the app's own answer to the operation's first request
 * example; every request body with its named examples, which Swagger UI sends as they are.
 */
export function withExamples<D>(input: D, recorded: RecordedExamples): D {
  const document = input as Document;
  for (const [path, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const key = `${method.toUpperCase()} ${path}`;
      const examples = { ...REQUEST_EXAMPLES[path], ...recorded.requests[path] };
      const body = operation.requestBody?.content['application/json'];
      if (body && Object.keys(examples).length > 0) body.examples = examples;
      for (const [status, response] of Object.entries(operation.responses)) {
        const [type, media] = Object.entries(response.content ?? {})[0] ?? [];
        const problem = type === 'application/problem+json' ? PROBLEMS[status] : undefined;
        if (problem) {
          response.description = problem.description;
          if (media)
            media.example = problemDocument(problem.code, problem.detail, '4f1c2a9e-7b3d-4e8a-9c61-2d5e8f0a7b13', problem.errors);
          continue;
        }
        response.description = DESCRIPTIONS[`${key} ${status}`] ?? schemaDescription(document, media) ?? response.description;
        const example = recorded.responses[key]?.[status];
        if (media && example !== undefined) media.example = example;
      }
    }
  }
  return input;
}
