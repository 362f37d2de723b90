import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge } from 'prom-client';
import type { Config } from '../../config.js';
import type { Compactor } from '../../service/compactor.js';
import { createCompactor } from '../../service/create.js';
import { bootStep, openWritableStore } from '../../store/boot.js';
import type { ArtifactStore } from '../../store/types.js';
import { relieveEncoders } from '../../tokens/encoders.js';

declare module 'fastify' {
  interface FastifyInstance {
    compactor: Compactor;
    store: ArtifactStore;
    /** Deadline of one strategy request, in ms. */
    deadlineMs: number;
    /** The installation secret (keys artifact ids and scopes); handed to worker threads, never logged. */
    artifactSecret: string;
    /** Whether the store lives in this process's memory (worker threads then reach it through the main thread). */
    storeIsLocal: boolean;
  }
}

export interface CompactorPluginOptions {
  config: Config;
  /** The summarizer's concurrency count, shared with the worker threads. */
  summarizerSlots: Int32Array;
  /** A store built by the caller (tests); otherwise one is opened from `COMPACTOR_STORE_URL`. */
  store?: ArtifactStore;
}

/**
 * Decorates the app with the service core and its artifact store (closed with the app), and
 * exposes the count cache and the store's size and evictions to the metrics. The store is opened,
 * written to and asked for the installation secret before the app is ready, each step within
 * `BOOT_TIMEOUT_MS`: a store that cannot serve fails the boot with a `StoreBootError`.
 */
export default fp<CompactorPluginOptions>(
  async (app: FastifyInstance, options) => {
    const { config } = options;
    const url = config.COMPACTOR_STORE_URL;
    const storeOptions = { maxBytes: config.COMPACTOR_STORE_MAX_BYTES, keyPrefix: `${config.COMPACTOR_STORE_PREFIX}:` };
    const store = options.store ?? (await openWritableStore(url, storeOptions));
    app.addHook('onClose', async () => {
      if (!options.store) await store.close();
    });
    app.decorate('store', store);
    // Ids and scopes are keyed by one secret that every replica sharing the store agrees on.
    let secret = config.COMPACTOR_ARTIFACT_SECRET;
    try {
      secret ??= await bootStep('secret', store.kind, () => store.secret(randomBytes(32).toString('hex')));
    } catch (error) {
      // A failed boot never reaches onClose: a Redis client left open would keep reconnecting.
      if (!options.store) await store.close();
      throw error;
    }
    app.decorate('artifactSecret', secret);
    app.decorate(
      'storeIsLocal',
      options.store !== undefined || url.startsWith('memory') || url === 'sqlite:' || url === 'sqlite::memory:',
    );
    app.decorate('deadlineMs', config.COMPACTOR_DEADLINE_MS);
    const compactor = await createCompactor(config, { store, secret, logger: app.log, summarizerSlots: options.summarizerSlots });
    app.decorate('compactor', compactor);
    // The tokenizer's cache of merges is emptied after each answer too, not only before the next
    // request: an idle service keeps fewer than `MERGE_CACHE_CLEAR_AT` of them, not up to 100,000
    // (38 MiB per encoding, issue 39 #10). Worker threads do the same after each task.
    app.addHook('onResponse', async () => relieveEncoders());
    const { counter } = compactor;
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
    // A worker's remote store reports no usage: the main thread's store counts for it.
    if (store.usage()) {
      stat('compactor_store_bytes', 'Content bytes of the artifacts in the store', () => store.usage()?.bytes ?? 0);
      new Counter({
        name: 'compactor_artifacts_evicted_total',
        help: 'Artifacts evicted, least recently used first, to keep the store under COMPACTOR_STORE_MAX_BYTES (reason "cap"), by store kind',
        labelNames: ['store', 'reason'],
        registers: [app.metrics.registry],
        collect() {
          // The store counts; the counter shows its count (monotonic while the store is open).
          this.reset();
          // Worker threads open the same file or Redis on connections of their own and report theirs.
          const evicted = (store.usage()?.evicted ?? 0) + (app.hasDecorator('workerPool') ? app.workerPool.evicted : 0);
          this.inc({ store: store.kind, reason: 'cap' }, evicted);
        },
      });
    }
  },
  { name: 'compactor', dependencies: ['metrics'] },
);
