import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter } from 'prom-client';
import type { Config } from '../../config.js';
import { Preparer } from '../../service/prepare.js';
import type { PreparedSummaries, PrepareEvent, PreparerOptions } from '../../service/prepared-summaries.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prepared summaries: made off the request path, spliced in by the call that needs them. */
    preparer: PreparedSummaries;
  }
}

/** Whether fit prepares when a request does not say: COMPACTOR_PREPARE, else on when an LLM summarizer is configured. */
export function prepareByDefault(config: Config): boolean {
  if (config.COMPACTOR_PREPARE) return config.COMPACTOR_PREPARE === 'on';
  return Boolean(config.OPENAI_BASE_URL || config.OPENAI_API_KEY);
}

/**
 * The replicas' shared prepared summaries, on the store's Redis. Loaded only with a Redis store, as
 * the store loads its client: an embedded service never loads ioredis or BullMQ.
 */
async function openShared(app: FastifyInstance, config: Config, common: PreparerOptions): Promise<PreparedSummaries> {
  const { RedisPreparer } = await import('../../service/prepare-redis.js');
  return RedisPreparer.open(app.compactor, {
    ...common,
    url: config.COMPACTOR_STORE_URL,
    prefix: config.COMPACTOR_JOBS_PREFIX,
    lockDurationMs: config.COMPACTOR_JOBS_LOCK_MS,
    // Connection errors, with no request content; the client reconnects by itself.
    onError: (error) => app.log.warn({ error: (error as Error)?.message }, 'prepared summaries: Redis error'),
  });
}

/**
 * The prepared-summary service of this process (the main thread's: worker threads get a caller's
 * entries with each task), its Prometheus counters, closed with the app after the requests it
 * serves (running jobs are handed back or dropped then, not waited for). With a Redis store it is shared by the
 * replicas (BullMQ jobs and an index per caller under `COMPACTOR_JOBS_PREFIX`); else embedded.
 */
export default fp<{ config: Config }>(
  async (app: FastifyInstance, { config }) => {
    const registers = [app.metrics.registry];
    const events = new Counter({
      name: 'compactor_prepared_total',
      help: 'Prepared summaries by what became of them: prepared (made), spliced (used), wasted (dropped unused), failed, dropped (before they ran)',
      labelNames: ['event'],
      registers,
    });
    const tokens = new Counter({
      name: 'compactor_prepared_tokens_total',
      help: 'Summarizer tokens (input plus output) of prepared summaries, by what became of them',
      labelNames: ['event'],
      registers,
    });
    const common: PreparerOptions = {
      concurrency: config.COMPACTOR_SUMMARIZER_CONCURRENCY,
      byDefault: prepareByDefault(config),
      onEvent: (event: PrepareEvent, used: number) => {
        events.inc({ event });
        tokens.inc({ event }, used);
      },
    };
    const url = config.COMPACTOR_STORE_URL;
    const preparer: PreparedSummaries = /^rediss?:\/\//.test(url)
      ? await openShared(app, config, common)
      : new Preparer(app.compactor, {
          ...common,
          maxQueued: config.COMPACTOR_PREPARE_QUEUE_MAX,
          maxQueuedBytes: config.COMPACTOR_PREPARE_QUEUE_MAX_BYTES,
        });
    app.decorate('preparer', preparer);
    // A background job is not a request: the grace period is the requests'. At close (after they
    // drained), running jobs are handed back at once (BullMQ: moved back to wait, another replica
    // runs them) or dropped (embedded: the next fit asks again), so the process exits 0.
    app.addHook('onClose', async () => {
      await preparer.close(0);
    });
  },
  { name: 'prepare', dependencies: ['metrics', 'compactor'] },
);
