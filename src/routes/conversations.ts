import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ConversationDetail, ConversationList, ConversationListQuery, ConversationParams } from '../schemas/conversations.js';
import { PROBLEMS } from './operation-route.js';

/** `GET /v1/conversations` and `GET /v1/conversations/{id}`: what Compactor did to each model call, per conversation. */
export default async function conversationRoutes(app: FastifyInstance): Promise<void> {
  const zapp = app.withTypeProvider<ZodTypeProvider>();
  zapp.get(
    '/v1/conversations',
    {
      schema: {
        tags: ['conversations'],
        summary: "The caller's conversations, newest first",
        description:
          "Conversations this key's calls were recorded in: proxied model calls, and `/v1/fit` calls naming a `conversation_id`. Each with its newest call's time, provider and model, and its totals (tokens saved, spend against the same calls straight, prefix breaks, bypasses by reason). Records hold counts, ids and bills, never content; they live as long as the store's artifacts (`COMPACTOR_ARTIFACT_TTL_SECONDS`, the cap), and a read takes the key's newest 1,000 records. Paged with `limit` and `next_cursor`.",
        querystring: ConversationListQuery,
        response: { 200: ConversationList, ...PROBLEMS },
      },
    },
    async (request) => {
      const caller = app.compactor.caller(request.apiKeyDigest);
      const { limit, cursor } = request.query;
      return app.compactor.conversations.list(caller, limit, cursor === undefined ? 0 : Number(cursor));
    },
  );
  zapp.get(
    '/v1/conversations/:id',
    {
      schema: {
        tags: ['conversations'],
        summary: 'One conversation: each call and the totals',
        description:
          "Per model call, oldest first (the newest 200): when, provider, model, outcome (`reduced`, `kept`, `unchanged`, `bypass` with its reason, `compaction-answered`), tokens the client sent and tokens forwarded, whether the upstream prefix was kept (or the first message that changed), the cache reads and writes the provider reported, the call's bill and the same call's bill straight, the time spent before forwarding, and the artifacts and summaries it made (read each with `GET /v1/artifacts/{id}`). 404 when no call of it is kept for this key.",
        params: ConversationParams,
        response: { 200: ConversationDetail, 404: PROBLEMS[400], ...PROBLEMS },
      },
    },
    async (request) => app.compactor.conversations.get(app.compactor.caller(request.apiKeyDigest), request.params.id),
  );
}
