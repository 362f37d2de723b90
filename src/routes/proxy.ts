import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { keyCheck } from '../plugins/app/keys.js';
import { PROVIDER_NAMES, type ProviderName, upstreamVariable } from '../provider-names.js';
import type { ProxyContext } from '../proxy/context.js';
import { handle } from '../proxy/handler.js';
import { proxyMetrics } from '../proxy/metrics.js';
import { bootOptions } from '../proxy/options.js';
import { PROVIDERS } from '../proxy/providers.js';
import { CallReport } from '../proxy/report.js';
import { Upstreams } from '../proxy/upstream.js';
import { Windows } from '../proxy/window.js';

/**
 * The proxy routes: a drop-in base URL per provider (`/anthropic`, `/openai`, `/gemini`), each
 * request handled by the proxy's front door (`proxy/handler.ts`).
 */

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

export default async function proxyRoutes(app: FastifyInstance, { config }: { config: Config }): Promise<void> {
  const base = (name: ProviderName) => (config[upstreamVariable(name)] === 'off' ? undefined : config[upstreamVariable(name)]);
  const bases = Object.fromEntries(PROVIDER_NAMES.map((name) => [name, base(name)])) as Record<ProviderName, string | undefined>;
  const upstreams = new Upstreams({ bases, timeoutMs: config.COMPACTOR_PROXY_TIMEOUT_MS, connectTimeoutMs: 10_000 });
  app.addHook('onClose', async () => upstreams.close());
  const ctx: ProxyContext = {
    app,
    config,
    upstreams,
    metrics: proxyMetrics(app.metrics.registry),
    keys: keyCheck(config.COMPACTOR_API_KEYS),
    defaults: bootOptions(config),
    report: new CallReport(app.log),
    windows: new Windows(config.COMPACTOR_DEFAULT_CONTEXT_WINDOW),
  };
  await app.register(async (scope) => {
    // Bodies are the client's, as they came: read (or streamed on) by the handler itself.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    for (const name of PROVIDER_NAMES) {
      const provider = PROVIDERS[name];
      scope.route({
        method: [...METHODS],
        url: `${provider.prefix}/*`,
        schema: { hide: true },
        handler: (r, p) => handle(ctx, provider, r, p),
      });
    }
  });
}
