import type { FastifyInstance } from 'fastify';
import { OPERATIONS } from '../service/operations.js';
import { operationRoute, STORE_PROBLEMS, SUMMARIZER_PROBLEMS } from './operation-route.js';

/**
 * What fit does, in one place: Swagger shows it, and the README's "What fit does" is generated
 * from it (`node scripts/readme-options.mjs`, between `<!-- description:/v1/fit -->` markers).
 */
export const FIT_DESCRIPTION = [
  'Call it before every model call with the history you would send and the usage your provider reported for the previous call. Up to three stages, each with the options object of its own endpoint: `compact`; `summarize` only while compaction leaves the history above the target (`target_tokens`, or `target_fraction` of the context window); `window` only when the summarizer failed (reported as `fallback`; `summarize.on_failure: error` answers the error instead) or the history is still above (by default a token budget that meets the target; it never drops the summary just written).',
  "When it reduces depends on `policy`. Under `cost` (the default) it reduces only where that lowers the agent's bill with its prompt cache in view: above `limit` (default: the context window minus a reply reserve) a reduction is forced down to the target (`cost.decision: forced`); under the limit, at any occupancy (even far below the target), the candidates (compaction clearing all it may at once; that plus a summary when compaction leaves the history above the target) are priced, and the one that pays most is made (`reduce`); when none pays nothing changes (`reason: does_not_pay`, `cost.decision: defer`) and `call_again_at` is the occupancy at which one will pay or be forced. A candidate pays when its saving per later call times the expected remaining calls exceeds the cached prompt it re-bills plus the summarizer's bill. Prices: `pricing`, else the built-in table for `model`; the cached prefix: from `usage`; the remaining calls: `horizon`, else estimated from the t calls the run has made (P(more than x left) = t / (t + x), counted up to 200 ahead: about 47 at t = 20), and then it must also pay back within t calls. Under `tokens`, fit reduces whenever over the target (below it: `below_trigger`), compaction stopping at it, and a stage that would free less than `min_saving_fraction` of occupancy is skipped.",
  'Prepared summaries (default with an LLM summarizer): once occupancy reaches `prepare.at`, the summary a later call will need is made off the request path (`prepared`, `GET /v1/prepared/{id}`), and the call that needs it splices it in without waiting, when its history still holds that range byte-identical; it is billed once, there (`usage.prepared`).',
  '`stages` reports each stage; billed `usage` is their sum; `cost` what the reduction costs and saves. Always a valid history: when the target cannot be met without breaking a structural rule, `warnings` says `target_not_met` with the irreducible size.',
].join('\n\n');

/** `POST /v1/fit`: the pipeline an agent calls before every model call. */
export default async function fitRoute(app: FastifyInstance): Promise<void> {
  operationRoute(app, OPERATIONS['/v1/fit'], {
    tags: ['strategies'],
    summary: 'Fit: compact, then summarize if still over target, window as the last resort; only where it lowers the bill',
    description: FIT_DESCRIPTION,
    problems: { ...SUMMARIZER_PROBLEMS, ...STORE_PROBLEMS },
  });
}
