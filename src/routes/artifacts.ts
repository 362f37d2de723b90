import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ArtifactParams, ArtifactResponse } from '../schemas/artifacts.js';
import { OPERATIONS } from '../service/operations.js';
import { operationRoute, PROBLEMS } from './operation-route.js';

/** `/v1/expand` and `/v1/artifacts/{id}`: the originals that compaction and summaries offloaded. */
export default async function artifactRoutes(app: FastifyInstance): Promise<void> {
  operationRoute(app, OPERATIONS['/v1/expand'], {
    tags: ['strategies'],
    summary: 'Restore every offloaded original in a compacted history, byte-exact',
    description:
      'Finds the placeholders Compactor wrote (`[compactor:art_…]`) and puts each original back, from the store or from the `artifacts` a `store: "inline"` compaction returned. Summaries, section summaries and QA-merged headers are replaced by the messages they stand for only when their marker\'s MAC verifies for this key (`mac=…`); text that merely looks like one (typed, quoted, printed by a tool, another key\'s) stays as it is. So is a tool-result or tool-input placeholder: its MAC covers the call it was written for (its id, tool, arguments and rank among identical calls) and the whole text of its slot, and it restores only into that call, once; one that does not verify where it sits stays as it is, and `warnings` says `placeholder_not_verified`. What an expand restores counts against `COMPACTOR_EXPAND_MAX_BYTES` (413 past it) and the bytes in flight (503 with `retry-after`). Unknown or expired ids are listed in `missing` and their placeholders stay; the rest of the history is still restored.',
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
