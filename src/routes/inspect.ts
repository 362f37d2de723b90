import type { FastifyInstance } from 'fastify';
import { OPERATIONS } from '../service/operations.js';
import { operationRoute } from './operation-route.js';

/** `/v1/tokens` and `/v1/validate`: read a history, change nothing. */
export default async function inspectRoutes(app: FastifyInstance): Promise<void> {
  operationRoute(app, OPERATIONS['/v1/tokens'], {
    tags: ['inspect'],
    summary: 'Count the tokens of a history, per message and in total',
    description:
      'Counts as the strategies do: the model\'s real tokenizer for OpenAI models (o200k_base or cl100k_base), a documented estimate otherwise (`counting: "estimated"`), with per-message framing and flat costs for media. With `usage`, `occupancy` is the reported total plus the counted tokens of the messages after `messages_covered`.',
  });
  operationRoute(app, OPERATIONS['/v1/validate'], {
    tags: ['inspect'],
    summary: "Check a history against its format's structural rules",
    description:
      'Answers 200 whatever the verdict, listing every violation (orphan tool results, unanswered tool calls, role order, …). A history that cannot even be parsed (unknown roles, wrong types) is a 400.',
  });
}
