import type { Warning } from '../history/types.js';
import { type BilledUsage, NO_BILLED, type PreparedContext, prepares, withTotal } from '../strategies/types.js';
import type { ArtifactService, Caller } from './artifacts.js';

/**
 * What a run does with prepared summaries around its strategy: the ones it is offered (none while
 * they are unavailable, then a warning when it would have used them), and the one it spliced in,
 * billed to one response only.
 */

/**
 * The prepared summaries a run is given: none while they are unavailable (their Redis did not
 * answer), and then a `prepared_unavailable` warning when the run would have used them (fit's
 * `prepare.enabled`, else the service's default; never in a dry run).
 */
export function offeredPrepared(
  offered: PreparedContext | undefined,
  options: unknown,
  dryRun: boolean,
): { prepared: PreparedContext | undefined; warnings: Warning[] } {
  if (!offered?.unavailable) return { prepared: offered, warnings: [] };
  const asked = (options as { prepare?: { enabled?: boolean } } | undefined)?.prepare?.enabled;
  const wanted = prepares(asked, dryRun, offered.byDefault);
  return { prepared: undefined, warnings: wanted ? [{ code: 'prepared_unavailable', message: offered.unavailable }] : [] };
}

/**
 * A prepared summary spliced in is billed to one response: the first to claim it in the store.
 * Concurrent responses all read it unbilled from the index; the others take its usage out of
 * their totals (`usage.prepared` all 0) and say so.
 */
export async function billOnce(
  artifacts: ArtifactService,
  caller: Caller,
  usage: BilledUsage | undefined,
  spliced: string | undefined,
): Promise<{ usage: BilledUsage | undefined; warnings: Warning[] }> {
  const made = usage?.prepared;
  if (!usage || !made || !spliced || made.calls === 0 || (await artifacts.claim(caller, `prepared:${spliced}`))) {
    return { usage, warnings: [] };
  }
  const rest = {
    input_tokens: usage.input_tokens - made.input_tokens,
    output_tokens: usage.output_tokens - made.output_tokens,
    cached_input_tokens: usage.cached_input_tokens - made.cached_input_tokens,
    calls: usage.calls - made.calls,
  };
  return {
    usage: { ...rest, model: rest.calls > 0 ? usage.model : null, prepared: withTotal({ ...NO_BILLED, model: made.model }) },
    warnings: [{ code: 'prepared_already_billed', message: `the prepared summary ${spliced} was billed to another response` }],
  };
}
