import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Gauge } from 'prom-client';
import { Compactor } from '../compactor.js';
import { TokenCounter } from '../tokens/counter.js';

declare module 'fastify' {
  interface FastifyInstance {
    compactor: Compactor;
  }
}

export interface CompactorPluginOptions {
  tokenCacheEntries: number;
}

/** Decorates the app with the service core and exposes its count cache to the metrics. */
export default fp<CompactorPluginOptions>(
  async (app: FastifyInstance, options) => {
    const counter = new TokenCounter(options.tokenCacheEntries);
    app.decorate('compactor', new Compactor(counter, app.log));
    const stat = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [app.metrics.registry],
        collect() {
          this.set(read());
        },
      });
    stat('compactor_token_cache_hits', 'Token count cache hits since start', () => counter.stats().hits);
    stat('compactor_token_cache_misses', 'Token count cache misses since start', () => counter.stats().misses);
    stat('compactor_token_cache_entries', 'Messages in the token count cache', () => counter.stats().entries);
  },
  { name: 'compactor', dependencies: ['metrics'] },
);
