import type { Config } from '../config.js';
import type { TokenCounter } from '../tokens/counter.js';
import { resolveModel } from '../tokens/models.js';
import { ExtractiveSummarizer } from './extractive.js';
import type { Summarizer } from './types.js';

/**
 * The summarizer the configuration asks for: the LLM one when `OPENAI_BASE_URL` or
 * `OPENAI_API_KEY` is set (loaded only then), else the extractive one, so a fresh machine needs
 * no key. Threads that pass the same `sharedSlots` share one concurrency limit. Transcript entries
 * are counted (to plan chunks) through the service's count cache, `counter`: a history grows by a
 * few messages a call, so most entries were counted on the previous call.
 */
export async function createSummarizer(config: Config, counter: TokenCounter, sharedSlots?: Int32Array): Promise<Summarizer> {
  if (!config.OPENAI_BASE_URL && !config.OPENAI_API_KEY) return new ExtractiveSummarizer();
  const { LlmSummarizer } = await import('./llm.js');
  const model = config.COMPACTOR_SUMMARIZER_MODEL as string;
  const profile = resolveModel(model);
  return new LlmSummarizer({
    baseURL: config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
    apiKey: config.OPENAI_API_KEY,
    defaultModel: model,
    allowedModels: config.COMPACTOR_SUMMARIZER_MODELS ?? [],
    timeoutMs: config.COMPACTOR_SUMMARIZER_TIMEOUT_MS,
    maxRetries: config.COMPACTOR_SUMMARIZER_MAX_RETRIES,
    concurrency: config.COMPACTOR_SUMMARIZER_CONCURRENCY,
    sharedSlots,
    countTokens: (text) => counter.countTextCached(profile, text),
  });
}
