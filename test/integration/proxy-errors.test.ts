import Anthropic from '@anthropic-ai/sdk';
import { ApiError } from '@google/genai';
import OpenAI from 'openai';
import t from 'tap';
import { anthropicError, geminiError, openaiError } from '../../src/proxy/errors.js';
import { anthropic, anthropicTurn, chatTurn, gemini, geminiTurn, openai, proxied, responsesTurn } from '../support/sdk-calls.js';
import { stand } from '../support/sdk-stand.js';

/**
 * The proxy's own errors in each provider's shape, with the provider's own type for the status:
 * each SDK raises its own error class for them (the agents built on the SDKs tell their user
 * what happened instead of retrying or hanging), checked through a real listening Compactor.
 */

const KEY = 'compactor-key-0123456789';

t.test('with keys on and none sent, each SDK raises its own authentication error', async (t) => {
  const { proxy, upstream } = await stand(t, undefined, { COMPACTOR_API_KEYS: KEY });
  const c = { roots: proxied(proxy) };
  const a = await anthropic(c)
    .messages.create(anthropicTurn)
    .catch((e: unknown) => e);
  t.ok(a instanceof Anthropic.AuthenticationError, 'Anthropic: AuthenticationError');
  t.equal((a as { error?: { error?: { type?: string } } }).error?.error?.type, 'authentication_error');
  for (const call of [() => openai(c).responses.create(responsesTurn), () => openai(c).chat.completions.create(chatTurn)]) {
    const o = await call().catch((e: unknown) => e);
    t.ok(o instanceof OpenAI.AuthenticationError, 'OpenAI: AuthenticationError');
    t.equal((o as { code?: string }).code, 'invalid_api_key');
  }
  const g = await gemini(c)
    .models.generateContent(geminiTurn)
    .catch((e: unknown) => e);
  t.ok(g instanceof ApiError, 'Gemini: ApiError');
  t.equal((g as ApiError).status, 401);
  t.match((g as ApiError).message, /UNAUTHENTICATED/);
  // Claude Code retries a 401 with backoff (8 tries over 100 s, nothing printed) unless told not to, as Anthropic's API tells it.
  const raw = await fetch(`${proxy}/anthropic/v1/messages`, { method: 'POST', body: '{}', headers: { 'x-api-key': 'sk-ant' } });
  await raw.text();
  t.equal(raw.headers.get('x-should-retry'), 'false', 'x-should-retry: false, as the providers send it');
  t.equal(upstream.requests.length, 0, 'nothing reached the provider');
});

t.test('an upstream that cannot be reached: each SDK raises its own server error', async (t) => {
  const { proxy, upstream } = await stand(t);
  await upstream.stop();
  const c = { roots: proxied(proxy) };
  const a = await anthropic(c)
    .messages.create(anthropicTurn)
    .catch((e: unknown) => e);
  t.ok(a instanceof Anthropic.InternalServerError, 'Anthropic: InternalServerError');
  t.equal((a as { error?: { error?: { type?: string } } }).error?.error?.type, 'api_error');
  const o = await openai(c)
    .responses.create(responsesTurn)
    .catch((e: unknown) => e);
  t.ok(o instanceof OpenAI.InternalServerError, 'OpenAI: InternalServerError');
  const g = await gemini(c)
    .models.generateContent(geminiTurn)
    .catch((e: unknown) => e);
  t.ok(g instanceof ApiError && g.status === 502 && /UNAVAILABLE/.test(g.message), 'Gemini: 502 UNAVAILABLE');
});

t.test('each status maps to the type, code or status its provider writes', async (t) => {
  const anthropicTypes: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    500: 'api_error',
    502: 'api_error',
    529: 'overloaded_error',
  };
  for (const [status, type] of Object.entries(anthropicTypes))
    t.same(anthropicError(Number(status), 'm'), { type: 'error', error: { type, message: 'm' } }, `Anthropic ${status}`);
  t.same(openaiError(401, 'm'), { error: { message: 'm', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
  t.same(openaiError(429, 'm'), { error: { message: 'm', type: 'requests', param: null, code: 'rate_limit_exceeded' } });
  t.match(openaiError(500, 'm'), { error: { type: 'server_error' } });
  const googleStatuses: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    429: 'RESOURCE_EXHAUSTED',
    500: 'INTERNAL',
    503: 'UNAVAILABLE',
  };
  for (const [status, name] of Object.entries(googleStatuses))
    t.same(geminiError(Number(status), 'm'), { error: { code: Number(status), message: 'm', status: name } }, `Gemini ${status}`);
});

t.test('the SDKs read each status as their own class (403, 404, 429, 503)', async (t) => {
  // The SDKs choose their class from the status and read type and code from the body: checked on the bodies themselves.
  const cases: [number, unknown][] = [
    [403, Anthropic.PermissionDeniedError],
    [404, Anthropic.NotFoundError],
    [429, Anthropic.RateLimitError],
    [503, Anthropic.InternalServerError],
  ];
  for (const [status, cls] of cases) {
    const e = Anthropic.APIError.generate(status, anthropicError(status, 'm') as object, 'm', new Headers());
    t.ok(e instanceof (cls as typeof Anthropic.APIError), `Anthropic ${status}`);
    const o = OpenAI.APIError.generate(status, openaiError(status, 'm') as object, 'm', new Headers());
    t.ok(o instanceof OpenAI.APIError && o.status === status, `OpenAI ${status}`);
  }
  const rate = OpenAI.APIError.generate(429, openaiError(429, 'm') as object, 'm', new Headers());
  t.ok(rate instanceof OpenAI.RateLimitError);
  t.equal(rate.code, 'rate_limit_exceeded');
});
