import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { CompactorError } from '../errors.js';
import { Problem } from '../schemas/common.js';
import type { Strategy } from '../strategies/types.js';

export const PROBLEMS = { 400: Problem, 401: Problem, 413: Problem, 415: Problem, 429: Problem, 500: Problem, 503: Problem };
/** What a strategy that calls the summarizer may answer besides (its upstream's failures). */
export const SUMMARIZER_PROBLEMS = { 502: Problem, 504: Problem };

interface StrategyRoute<O extends z.ZodObject, E> {
  url: string;
  strategy: Strategy<O, E>;
  body: z.ZodType<z.output<O> & { messages: unknown[] }>;
  response: z.ZodType;
  summary: string;
  description: string;
  /** Error statuses beyond `PROBLEMS` that this endpoint may answer. */
  problems?: Record<number, z.ZodType>;
}

/**
 * Registers a strategy endpoint: the body holds the common history fields plus the strategy's
 * options; the response holds the common fields plus the strategy's own (`dropped`, …).
 */
export function strategyRoute<O extends z.ZodObject, E extends object>(app: FastifyInstance, route: StrategyRoute<O, E>): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    route.url,
    {
      schema: {
        tags: ['strategies'],
        summary: route.summary,
        description: route.description,
        body: route.body,
        response: { 200: route.response, ...PROBLEMS, ...route.problems },
      },
    },
    async (request) => {
      const body = request.body as z.output<O> & Parameters<FastifyInstance['compactor']['run']>[1];
      const started = performance.now();
      const { metrics } = app;
      let answer: Awaited<ReturnType<FastifyInstance['compactor']['run']>>;
      try {
        answer = await app.compactor.run(route.strategy, body, body, {
          signal: AbortSignal.timeout(app.deadlineMs),
          caller: app.compactor.caller(request.apiKeyDigest),
        });
      } catch (error) {
        if (error instanceof CompactorError && error.code.startsWith('CMP_ERR_SUMMARIZER_'))
          metrics.summarizerErrors.inc({ code: error.code });
        throw error;
      }
      const { extra, ...result } = answer as typeof answer & { extra: E };
      const x = extra as { summary?: { cached?: boolean } | null; artifacts?: { kind: string; content?: unknown }[] };
      if (result.applied) metrics.tokensSaved.inc({ strategy: route.strategy.kind }, result.tokens.saved);
      const model = result.usage.model ?? 'none';
      if (result.usage.calls > 0) {
        metrics.billedTokens.inc({ model, kind: 'input' }, result.usage.input_tokens);
        metrics.billedTokens.inc({ model, kind: 'output' }, result.usage.output_tokens);
        metrics.billedTokens.inc({ model, kind: 'cached_input' }, result.usage.cached_input_tokens);
      }
      for (const w of result.warnings) {
        if (w.code === 'summarizer_failed') metrics.summarizerErrors.inc({ code: w.message.split(':')[0] ?? 'unknown' });
      }
      if (x.summary) metrics.summaryCache.inc({ result: x.summary.cached ? 'hit' : 'miss' });
      if (result.applied && body.dry_run !== true)
        // An artifact returned inline (with its content) was not stored.
        for (const a of x.artifacts ?? []) if (!('content' in a)) metrics.artifactsStored.inc({ kind: a.kind });
      // Counts and codes only: never message content, prompts or keys.
      request.log.info(
        {
          strategy: route.strategy.kind,
          format: result.format,
          messages: body.messages.length,
          applied: result.applied,
          reason: result.reason,
          tokens_before: result.tokens.before,
          tokens_after: result.tokens.after,
          billed_tokens: result.usage.total_tokens,
          billed_model: result.usage.model,
          duration_ms: Math.round(performance.now() - started),
        },
        'strategy done',
      );
      return { ...result, ...extra };
    },
  );
}
