import type { FastifyInstance } from 'fastify';
import { strategyUrl } from '../operations.js';
import { STRATEGIES, type StrategyKind } from '../strategies/registry.js';
import { operationRoute, STORE_PROBLEMS, SUMMARIZER_PROBLEMS } from './operation-route.js';

const ANSWERS = { summarizer: SUMMARIZER_PROBLEMS, store: STORE_PROBLEMS };

/** `/v1/{kind}` for every strategy of the registry, described by the strategy itself. */
export default async function strategyRoutes(app: FastifyInstance): Promise<void> {
  for (const kind of Object.keys(STRATEGIES) as StrategyKind[]) {
    const strategy = STRATEGIES[kind];
    operationRoute(app, {
      url: strategyUrl(kind),
      tags: ['strategies'],
      problems: Object.assign({}, ...(strategy.answers ?? []).map((answer) => ANSWERS[answer])),
      summary: strategy.docs.summary,
      description: strategy.docs.description,
    });
  }
}
