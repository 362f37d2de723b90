/**
 * The proxy's own errors in each provider's shape, with the type, code or status the provider
 * itself writes for that HTTP status, so that each SDK raises its own error class
 * (`AuthenticationError`, `RateLimitError`, …) and each CLI tells its user what happened.
 */

/** Anthropic's `error.type` by status (docs.anthropic.com, "Errors"). */
const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'api_error',
  529: 'overloaded_error',
};

/** `{"type":"error","error":{"type","message"}}`, as the Messages API answers. */
export function anthropicError(status: number, message: string): unknown {
  const type = ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message } };
}

/** OpenAI's `error.type` and `error.code` by status, as its API writes them. */
const OPENAI_KINDS: Readonly<Record<number, { type: string; code: string | null }>> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'unknown_url' },
  413: { type: 'invalid_request_error', code: 'request_too_large' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  502: { type: 'server_error', code: 'bad_gateway' },
  503: { type: 'server_error', code: 'service_unavailable' },
};

/** `{"error":{"message","type","param","code"}}`, as the OpenAI API answers. */
export function openaiError(status: number, message: string): unknown {
  const kind = OPENAI_KINDS[status] ?? (status >= 500 ? { type: 'server_error', code: null } : OPENAI_KINDS[400]);
  return { error: { message, type: kind?.type, param: null, code: kind?.code ?? null } };
}

/** Google's canonical status (`google.rpc.Code`) by HTTP status. */
const GEMINI_STATUSES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** `{"error":{"code","message","status"}}`, as the Gemini API answers. */
export function geminiError(status: number, message: string): unknown {
  const name = GEMINI_STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
  return { error: { code: status, message, status: name } };
}
