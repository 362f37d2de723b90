import { createHash, timingSafeEqual } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CompactorError } from '../errors.js';

export interface GuardOptions {
  /** Keys that may call; empty or undefined: open (bind to localhost). */
  apiKeys: readonly string[] | undefined;
  /** `api`: keys guard `/v1/*` only; `all`: health, metrics and docs too. */
  scope: 'api' | 'all';
  /** Requests per minute per client on `/v1/*`; 0: off. */
  rateLimit: number;
  /** Event-loop delay (ms) above which requests get 503 with retry-after; 0: off. */
  maxEventLoopDelay: number;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Bearer API keys compared in constant time (over SHA-256 digests, so lengths leak nothing),
 * rate limiting per client, and load shedding: past the event-loop delay limit the service answers
 * 503 with `retry-after` rather than queueing until everything times out.
 */
export default fp<GuardOptions>(
  async (app: FastifyInstance, options) => {
    const keys = (options.apiKeys ?? []).map(digest);
    const guarded = (request: FastifyRequest) => options.scope === 'all' || request.url.startsWith('/v1/');

    if (keys.length > 0) {
      app.addHook('onRequest', async (request, reply) => {
        if (!guarded(request)) return;
        const header = request.headers.authorization;
        const match = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header) : null;
        reply.header('www-authenticate', 'Bearer realm="compactor"');
        if (!match?.[1]) throw new CompactorError('CMP_ERR_AUTH_REQUIRED', 'send Authorization: Bearer <key>');
        const given = digest(match[1].trim());
        // Compare with every key, always: the time taken says nothing about which one matched.
        let ok = false;
        for (const key of keys) ok = timingSafeEqual(given, key) || ok;
        if (!ok) throw new CompactorError('CMP_ERR_AUTH_INVALID', 'the API key is not valid');
        reply.removeHeader('www-authenticate');
      });
    }

    if (options.rateLimit > 0) {
      await app.register(rateLimit, {
        max: options.rateLimit,
        timeWindow: 60_000,
        allowList: (request) => !request.url.startsWith('/v1/'),
        keyGenerator: (request) => {
          const auth = request.headers.authorization;
          return typeof auth === 'string' ? `key:${createHash('sha256').update(auth).digest('base64')}` : `ip:${request.ip}`;
        },
        errorResponseBuilder: (_request, context) =>
          new CompactorError(
            'CMP_ERR_RATE_LIMITED',
            `rate limit of ${context.max} requests per minute reached; retry in ${Math.ceil(context.ttl / 1000)} s`,
          ),
      });
    }

    if (options.maxEventLoopDelay > 0) {
      await app.register(underPressure, {
        maxEventLoopDelay: options.maxEventLoopDelay,
        retryAfter: 5,
        pressureHandler: (request, reply) => {
          // Liveness, readiness and metrics keep answering: a saturated sidecar is not a dead one.
          if (request.url.startsWith('/health') || request.url.startsWith('/metrics')) return;
          reply.header('retry-after', '5');
          throw new CompactorError('CMP_ERR_OVERLOADED', 'the service is saturated; retry in 5 s');
        },
      });
    }
  },
  { name: 'guard', dependencies: ['problem'] },
);
