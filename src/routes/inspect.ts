import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { TokensRequest, TokensResponse, ValidateRequest, ValidateResponse } from '../schemas/tokens.js';
import { PROBLEMS } from './strategy-route.js';

/** `/v1/tokens` and `/v1/validate`: read a history, change nothing. */
export default async function inspectRoutes(app: FastifyInstance): Promise<void> {
  const zapp = app.withTypeProvider<ZodTypeProvider>();
  zapp.post(
    '/v1/tokens',
    {
      schema: {
        tags: ['inspect'],
        summary: 'Count the tokens of a history, per message and in total',
        description:
          'Counts as the strategies do: the model\'s real tokenizer for OpenAI models (o200k_base or cl100k_base), a documented estimate otherwise (`counting: "estimated"`), with per-message framing and flat costs for media. With `usage`, `occupancy` is the reported total plus the counted tokens of the messages after `messages_covered`.',
        body: TokensRequest,
        response: { 200: TokensResponse, ...PROBLEMS },
      },
    },
    async (request) => app.compactor.tokens(request.body),
  );
  zapp.post(
    '/v1/validate',
    {
      schema: {
        tags: ['inspect'],
        summary: "Check a history against its format's structural rules",
        description:
          'Answers 200 whatever the verdict, listing every violation (orphan tool results, unanswered tool calls, role order, …). A history that cannot even be parsed (unknown roles, wrong types) is a 400.',
        body: ValidateRequest,
        response: { 200: ValidateResponse, ...PROBLEMS },
      },
    },
    async (request) => app.compactor.validate(request.body),
  );
}
