/**
 * Every error the service can answer with, made once: a stable `CMP_ERR_<AREA>_<WHAT>` code, its
 * HTTP status and a short title. Codes are never reused or renamed; docs/api.md documents each one
 * and a test keeps that table, this catalogue and the thrown errors in sync.
 */
export const ERRORS = {
  CMP_ERR_REQUEST_VALIDATION: { status: 400, title: 'The request does not match its schema' },
  CMP_ERR_REQUEST_INVALID_JSON: { status: 400, title: 'The request body is not valid JSON' },
  CMP_ERR_REQUEST_FORBIDDEN_KEY: {
    status: 400,
    title: 'The request body contains a forbidden key (__proto__ or constructor.prototype)',
  },
  CMP_ERR_REQUEST_TOO_DEEP: { status: 400, title: 'The request body is nested too deeply' },
  CMP_ERR_REQUEST_EMPTY_BODY: { status: 400, title: 'The request body is empty' },
  CMP_ERR_REQUEST_MALFORMED: { status: 400, title: 'The request is not valid HTTP' },
  CMP_ERR_REQUEST_INVALID_URL: { status: 400, title: 'The request URL is malformed' },
  CMP_ERR_REQUEST_URI_TOO_LONG: { status: 414, title: 'The request URL is too long' },
  CMP_ERR_REQUEST_HEADERS_TOO_LARGE: { status: 431, title: 'The request headers are too large' },
  CMP_ERR_REQUEST_BODY_TOO_LARGE: { status: 413, title: 'The request body is larger than the limit' },
  CMP_ERR_REQUEST_TOO_MANY_MESSAGES: {
    status: 413,
    title: 'The request holds more messages, or would take more memory, than one request may',
  },
  CMP_ERR_REQUEST_HOST_NOT_ALLOWED: { status: 421, title: 'The Host header names no host this service answers for' },
  CMP_ERR_EXPAND_TOO_LARGE: { status: 413, title: 'The originals to restore are larger than one answer may hold' },
  CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: 'The request body must be application/json',
  },
  CMP_ERR_FORMAT_UNDETECTED: { status: 400, title: 'The history fits no supported format' },
  CMP_ERR_FORMAT_MIXED: { status: 400, title: 'The history mixes messages of different formats' },
  CMP_ERR_HISTORY_MALFORMED: {
    status: 400,
    title: 'A message is malformed for its format',
  },
  CMP_ERR_HISTORY_STRUCTURE: {
    status: 400,
    title: 'The history breaks a structural rule of its format',
  },
  CMP_ERR_OPTIONS_INVALID: { status: 400, title: 'The options cannot be applied to this history' },
  CMP_ERR_ARTIFACT_NOT_FOUND: { status: 404, title: 'No such artifact, or it has expired' },
  CMP_ERR_CONVERSATION_NOT_FOUND: { status: 404, title: 'No such conversation for this key, or its calls have expired' },
  CMP_ERR_PREPARED_NOT_FOUND: { status: 404, title: 'No such prepared summary for this key' },
  CMP_ERR_ARTIFACT_MISMATCH: { status: 400, title: "An inline artifact's content does not match its id" },
  CMP_ERR_STORE_UNAVAILABLE: {
    status: 503,
    title: 'The artifact store is unavailable for now (unreachable, busy, timed out or full); retry after the time given',
  },
  CMP_ERR_STORE_FAILED: {
    status: 500,
    title: 'The artifact store refuses to work (read-only, corrupt or access denied) until an operator fixes it',
  },
  CMP_ERR_STORE_ARTIFACT_TOO_LARGE: { status: 507, title: "The originals to offload are larger than the store's cap" },
  CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED: { status: 400, title: 'The requested summarizer model is not allowed' },
  CMP_ERR_SUMMARIZER_TIMEOUT: { status: 504, title: 'The summarizer did not answer in time' },
  CMP_ERR_SUMMARIZER_UNAVAILABLE: { status: 503, title: 'The summarizer cannot be reached or is rate limiting' },
  CMP_ERR_SUMMARIZER_UPSTREAM: { status: 502, title: 'The summarizer answered with an error or an unreadable answer' },
  CMP_ERR_SUMMARIZER_EMPTY: { status: 502, title: 'The summarizer returned an empty summary' },
  CMP_ERR_AUTH_REQUIRED: { status: 401, title: 'An API key is required (Authorization: Bearer <key>)' },
  CMP_ERR_AUTH_INVALID: { status: 401, title: 'The API key is not valid' },
  CMP_ERR_RATE_LIMITED: { status: 429, title: 'Too many requests; retry after the time given' },
  CMP_ERR_OVERLOADED: { status: 503, title: 'The service is saturated; retry after the time given' },
  CMP_ERR_ROUTE_NOT_FOUND: { status: 404, title: 'No such endpoint' },
  CMP_ERR_METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed on this endpoint' },
  CMP_ERR_SERVICE_UNAVAILABLE: { status: 503, title: 'The service is shutting down or not ready' },
  CMP_ERR_REQUEST_TIMEOUT: { status: 408, title: 'The request took too long to arrive' },
  CMP_ERR_INTERNAL: { status: 500, title: 'Internal error' },
  CMP_ERR_INTERNAL_INVALID_OUTPUT: {
    status: 500,
    title: 'The strategy produced a history that breaks a structural rule; nothing was returned',
  },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** One field-level problem, as listed under `errors` in a problem document. */
export interface FieldError {
  path: string;
  message: string;
}

/**
 * The one error class the service throws on purpose. The problem+json handler turns it into a
 * response; anything else that escapes is an internal error and is reported without details.
 */
export class CompactorError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  /** Sent as `retry-after` (seconds): when a retry may succeed. Unset: the code's default, if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, detail: string, errors?: FieldError[], options: { retryAfterSeconds?: number } = {}) {
    super(detail);
    this.name = 'CompactorError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.errors = errors;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Builds a `CompactorError` for one field: the path leads the detail so the reader finds it. */
export function fieldError(code: ErrorCode, path: string, message: string): CompactorError {
  return new CompactorError(code, `${path}: ${message}`, [{ path, message }]);
}

/** One schema validation failure as the zod validator reports it (`instancePath` like `/messages/3/role`). */
export interface ValidationIssue {
  readonly instancePath: string;
  readonly keyword: string;
  readonly message?: string | undefined;
  readonly params?: Record<string, unknown> | undefined;
}

/** Zod paths such as `/messages/3/role` or `["keep"]` become `messages[3].role`. */
function formatPath(parts: readonly (string | number)[]): string {
  return parts.reduce<string>((out, part) => {
    if (typeof part === 'number' || /^\d+$/.test(part)) return `${out}[${part}]`;
    return out ? `${out}.${part}` : part;
  }, '');
}

/**
 * The 400 for a request that does not match its schema, naming each field: one function for the
 * requests validated in line and those validated on a worker, so both answer alike.
 */
export function validationError(validation: readonly ValidationIssue[]): CompactorError {
  const errors = validation.map((v) => {
    const parts: (string | number)[] = v.instancePath.split('/').filter(Boolean);
    // An unknown key is reported on its parent object; name the key itself.
    const keys = v.keyword === 'unrecognized_keys' ? (v.params?.keys as string[] | undefined) : undefined;
    if (keys?.[0] !== undefined) parts.push(keys[0]);
    return { path: formatPath(parts) || '(body)', message: v.message ?? 'invalid' };
  });
  const first = errors[0];
  return new CompactorError(
    'CMP_ERR_REQUEST_VALIDATION',
    first ? `${first.path}: ${first.message}` : 'the request does not match its schema',
    errors,
  );
}
