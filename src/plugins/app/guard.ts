import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CompactorError } from '../../errors.js';
import { isProxyRoute } from '../../provider-names.js';
import { hostCheck } from './host-check.js';
import { bearerOf, keyCheck } from './keys.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the guard when the route is registered: a `/v1` route (keys, rate limit, queue). */
    api?: boolean;
    /**
     * A static page that holds no data (`/ui` and its files): served without a key whatever the
     * scope, since a browser cannot send a bearer key for a page it navigates to; what the page
     * reads (`/v1/…`) it asks for with the key entered in it.
     */
    page?: boolean;
    /** Set by the guard: a route that checks Compactor's key itself (the proxy's, `/mcp`), under either scope. */
    ownKey?: boolean;
  }
  interface FastifyRequest {
    /** SHA-256 digest of the API key that was validated for this request; null when none was. */
    apiKeyDigest: Buffer | null;
  }
  interface FastifyInstance {
    /** Every route the app serves, as registered, with whether it needs a key. */
    routeTable: { method: string; url: string; protected: boolean }[];
  }
}

export interface GuardOptions {
  /** Keys that may call; empty or undefined: open (bind to localhost). */
  apiKeys: readonly string[] | undefined;
  /** `api`: keys guard `/v1/*` only; `all`: health, metrics and docs too (never the `/ui` page's static files). */
  scope: 'api' | 'all';
  /** Requests per minute per client on `/v1/*`; 0: off. */
  rateLimit: number;
  /** Host names served besides addresses and one-label names (`COMPACTOR_ALLOWED_HOSTS`); set: checked even with keys. */
  allowedHosts?: readonly string[] | undefined;
  /** The address the service listens on (`HOST`): served as a `Host` too when it is a name. */
  bindHost?: string;
}

/**
 * Whether a request is for a `/v1` route, decided on the route the router matched, never on the
 * raw request target: `/%76%31/compact`, `/v%31/compact` and `GET http://host/v1/…` all match
 * `/v1/compact` and are guarded like it. An unmatched request (a 404) is no API request.
 */
export function isApiRequest(request: FastifyRequest): boolean {
  return request.routeOptions.config?.api === true;
}

/**
 * The `Host` check (`host-check.ts`); bearer API keys compared in constant time (over SHA-256
 * digests, so lengths leak nothing), on the route the router matched; and rate limiting per
 * validated key (per client address when no keys are configured). Load shedding (503) is
 * `plugins/load/`.
 */
export default fp<GuardOptions>(
  async (app: FastifyInstance, options) => {
    const keys = keyCheck(options.apiKeys);
    const table: FastifyInstance['routeTable'] = [];
    app.decorate('routeTable', table);
    app.decorateRequest('apiKeyDigest', null);
    app.addHook('onRoute', (route) => {
      const api = route.url.startsWith('/v1/');
      // The proxy and /mcp check the key themselves (the proxy in x-compactor-key, since its
      // Authorization is the provider's), whatever the scope: never the bearer check below.
      const own = route.url === '/mcp' || isProxyRoute(route.url);
      route.config = { ...route.config, api, ownKey: own };
      const page = route.config?.page === true && !api;
      for (const method of [route.method].flat())
        table.push({ method, url: route.url, protected: api || (options.scope === 'all' && !page) || (own && keys.on) });
    });
    const guarded = (request: FastifyRequest) => {
      if (isApiRequest(request)) return true;
      const config = request.routeOptions.config;
      return options.scope === 'all' && config?.page !== true && config?.ownKey !== true;
    };

    // Without keys, a page a browser loaded from another name must not reach the service through
    // DNS rebinding; with keys, the key stands in the way, unless names are configured anyway.
    if (!keys.on || options.allowedHosts !== undefined) {
      app.addHook(
        'onRequest',
        hostCheck([...(options.allowedHosts ?? []), ...(options.bindHost ? [options.bindHost.toLowerCase()] : [])]),
      );
    }

    if (keys.on) {
      app.addHook('onRequest', async (request, reply) => {
        if (!guarded(request)) return;
        const bearer = bearerOf(request.headers.authorization);
        reply.header('www-authenticate', 'Bearer realm="compactor"');
        if (!bearer) throw new CompactorError('CMP_ERR_AUTH_REQUIRED', 'send Authorization: Bearer <key>');
        const given = keys.check(bearer);
        if (!given) throw new CompactorError('CMP_ERR_AUTH_INVALID', 'the API key is not valid');
        reply.removeHeader('www-authenticate');
        request.apiKeyDigest = given;
      });
    }

    if (options.rateLimit > 0) {
      await app.register(rateLimit, {
        max: options.rateLimit,
        timeWindow: 60_000,
        allowList: (request) => !isApiRequest(request),
        // The validated key (however its header was spelled), else the client's address: a made-up
        // header buys no fresh budget.
        keyGenerator: (request) => (request.apiKeyDigest ? `key:${request.apiKeyDigest.toString('base64')}` : `ip:${request.ip}`),
        errorResponseBuilder: (_request, context) =>
          new CompactorError(
            'CMP_ERR_RATE_LIMITED',
            `rate limit of ${context.max} requests per minute reached; retry in ${Math.ceil(context.ttl / 1000)} s`,
          ),
      });
    }
  },
  { name: 'guard', dependencies: ['problem'] },
);
