import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ArtifactParams, ArtifactResponse } from '../schemas/compact.js';
import { operationRoute, PROBLEMS, STORE_PROBLEMS } from './operation-route.js';

/** `/v1/compact`, `/v1/expand` and `/v1/artifacts/{id}`. */
export default async function compactRoutes(app: FastifyInstance): Promise<void> {
  operationRoute(app, {
    url: '/v1/compact',
    tags: ['strategies'],
    problems: STORE_PROBLEMS,
    summary: 'Compaction: deterministic, reversible reduction of old tool traffic',
    description:
      'Replaces old tool results (all but the newest `keep_tool_uses`, excluded tools and results under `min_tokens` left alone) with placeholders that say what was there and name the artifact holding the original; identical older results become pointers to the newest copy (`dedupe`); with `clear_tool_inputs`, large arguments of old write/edit calls are cleared; with `truncate_tokens`, old results that stay keep only their head and tail; with `clear_thinking`, thinking is removed whole outside the newest `keep_turns` turns (a turn starts at a real user message, so a tool-use loop is one; the turn in progress always keeps its thinking; a Responses reasoning item goes only when no item of its response names it by id). Stops once under `target_tokens`; does nothing when the saving is under `clear_at_least`. Never calls an LLM. Deterministic and idempotent: compacting the output again changes nothing. `POST /v1/expand` restores the original history byte-exact (thinking removal excepted).',
  });

  operationRoute(app, {
    url: '/v1/expand',
    tags: ['strategies'],
    summary: 'Restore every offloaded original in a compacted history, byte-exact',
    description:
      'Finds the placeholders Compactor wrote (`[compactor:art_…]`) and puts each original back, from the store or from the `artifacts` a `store: "inline"` compaction returned. Unknown or expired ids are listed in `missing` and their placeholders stay; the rest of the history is still restored.',
  });

  const zapp = app.withTypeProvider<ZodTypeProvider>();
  zapp.get(
    '/v1/artifacts/:id',
    {
      schema: {
        tags: ['strategies'],
        summary: 'One offloaded original',
        description:
          'The original JSON value a placeholder replaced, for an agent-side "recall" tool. 404 when the id is unknown or the artifact has expired (`COMPACTOR_ARTIFACT_TTL_SECONDS`).',
        params: ArtifactParams,
        response: { 200: ArtifactResponse, 404: PROBLEMS[400], ...PROBLEMS },
      },
    },
    async (request) => app.compactor.artifact(request.params.id, app.compactor.caller(request.apiKeyDigest)),
  );
}
