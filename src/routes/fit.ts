import type { FastifyInstance } from 'fastify';
import { operationRoute, STORE_PROBLEMS, SUMMARIZER_PROBLEMS } from './operation-route.js';

export default async function fitRoutes(app: FastifyInstance): Promise<void> {
  operationRoute(app, {
    url: '/v1/fit',
    tags: ['strategies'],
    problems: { ...SUMMARIZER_PROBLEMS, ...STORE_PROBLEMS },
    summary: 'Fit: compact, then summarize if still over target, window as the last resort',
    description:
      'Gets occupancy under `target_tokens` (or `target_fraction` of the context window; below it, nothing is done: the target is the trigger). Stages, each with its own options object: `compact` (aimed at the target), `summarize` only if still above (a failure leaves the history as it was; with `summarize.on_failure: error` it is answered as the error), `window` only if the summarizer failed (reported as `fallback`) or the history is still above (by default a token budget that meets the target; it never drops the summary just written, only what follows it). A stage that would free less than `min_saving_fraction` of occupancy is skipped and said so. `stages` reports each; billed `usage` is their sum; `call_again_at` suggests when another call pays. Always a valid history: when the target cannot be met, `warnings` says `target_not_met` with the irreducible size.',
  });
}
