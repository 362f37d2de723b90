import type { Config } from '../config.js';
import { installedPrices } from '../cost/prices.js';
import type { ArtifactStore } from '../store/types.js';
import { createSummarizer } from '../summarizers/index.js';
import { TokenCounter } from '../tokens/counter.js';
import { Compactor, type CompactorLogger } from './compactor.js';

/** What the service is built with besides its configuration: what the process around it owns. */
export interface CompactorDeps {
  /** The artifact store, opened by the caller (the caller closes it). */
  store: ArtifactStore;
  /** The installation secret the store keeps (ids and scopes must agree across threads and replicas). */
  secret: string;
  logger: CompactorLogger;
  /** The summarizer's concurrency count, shared by every thread of the process (`Limiter.shared()`). */
  summarizerSlots?: Int32Array;
}

/**
 * The service, built in one place from the configuration: the count cache, the summarizer (the
 * LLM one when one is configured, else the extractive one), the prices and the store. The app,
 * each worker thread and background jobs all build it here, so they count, summarize and price alike.
 */
export async function createCompactor(config: Config, deps: CompactorDeps): Promise<Compactor> {
  const counter = new TokenCounter(config.COMPACTOR_TOKEN_CACHE_ENTRIES);
  return new Compactor(counter, {
    store: deps.store,
    secret: deps.secret,
    logger: deps.logger,
    artifactTtlSeconds: config.COMPACTOR_ARTIFACT_TTL_SECONDS,
    expandMaxBytes: config.COMPACTOR_EXPAND_MAX_BYTES ?? config.COMPACTOR_BODY_LIMIT,
    summarizer: await createSummarizer(config, counter, deps.summarizerSlots),
    ...installedPrices(config.COMPACTOR_PRICES_FILE, config.COMPACTOR_SUMMARIZER_PRICING),
  });
}
