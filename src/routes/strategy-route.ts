import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { Problem } from '../schemas/common.js';
import type { Strategy } from '../strategies/types.js';

export const PROBLEMS = { 400: Problem, 401: Problem, 413: Problem, 415: Problem, 429: Problem, 500: Problem, 503: Problem };

interface StrategyRoute<O extends z.ZodObject, E> {
  url: string;
  strategy: Strategy<O, E>;
  body: z.ZodType<z.output<O> & { messages: unknown[] }>;
  response: z.ZodType;
  summary: string;
  description: string;
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
        response: { 200: route.response, ...PROBLEMS },
      },
    },
    async (request) => {
      const body = request.body as z.output<O> & Parameters<FastifyInstance['compactor']['run']>[1];
      const { extra, ...result } = await app.compactor.run(route.strategy, body, body);
      if (result.applied) app.metrics.tokensSaved.inc({ strategy: route.strategy.kind }, result.tokens.saved);
      return { ...result, ...extra };
    },
  );
}
