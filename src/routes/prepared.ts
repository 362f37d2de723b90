import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { CompactorError } from '../errors.js';
import { PreparedParams, PreparedResponse } from '../schemas/prepared.js';
import { PROBLEMS } from './operation-route.js';

/** `GET /v1/prepared/{id}`: a summary fit prepares in the background, within the caller's key. */
export default async function preparedRoute(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/prepared/:id',
    {
      schema: {
        tags: ['strategies'],
        summary: 'One prepared summary: its state, range and cost',
        description:
          "A summary fit started off the request path (`prepared` in its response): `started` or `running` while it is made, `ready` when made and not used yet, `spliced` once a response used it, `failed` (with the error code) when it could not be made. `usage` is what making it cost, billed to the response that splices it in. 404 when the id is unknown, is another key's, or was dropped (a service keeps the newest 32 per key).",
        params: PreparedParams,
        response: { 200: PreparedResponse, 404: PROBLEMS[400], ...PROBLEMS },
      },
    },
    async (request) => {
      const caller = app.compactor.caller(request.apiKeyDigest);
      const view = await app.preparer.view(caller.scope, request.params.id);
      if (!view) throw new CompactorError('CMP_ERR_PREPARED_NOT_FOUND', 'no such prepared summary for this key');
      return view;
    },
  );
}
