import { type CostModel, type Estimate, worthIt } from '../../cost/estimate.js';
import type { Warning } from '../../history/types.js';
import type { SummarizeOptions } from '../summarize/options.js';
import type { PreparedEntry } from '../types.js';

/** A reduction fit could make, priced: compaction alone, or compaction then a summary. */
export interface Candidate {
  readonly kind: 'compact' | 'summarize';
  readonly estimate: Estimate;
}

/** A prepared summary a history can splice in, and the summarize options whose summary it is (a summary-cache hit). */
export interface Spliceable {
  readonly entry: PreparedEntry;
  readonly options: SummarizeOptions;
}

/** What fit decides from: the request resolved and, under policy cost below the limit, its candidates measured. */
export interface Measurements {
  readonly policy: 'cost' | 'tokens';
  /** The input's occupancy, the target it aims under, the limit above which (policy cost) a reduction is forced. */
  readonly occupancy: number;
  readonly target: number;
  readonly limit: number;
  readonly forced: boolean;
  readonly model: CostModel;
  /** Compaction clearing all it may; that and a summary when compaction leaves the history above the target. */
  readonly candidates: readonly Candidate[];
  /** A summary is being prepared for this history, or one can be asked for now that a later call splices. */
  readonly pending: boolean;
  /** A prepared summary ready to splice into what compaction leaves. */
  readonly ready: Spliceable | undefined;
  /**
   * The ready summary was spliced by an earlier call into a shorter history (`resent`): this
   * client keeps its whole history and adopts no answer, so splicing it again keeps its prefix.
   */
  readonly resent: boolean;
}

/** Nothing changes: why, when to call again, and the candidates considered (each reported as a stage not applied). */
export interface Deferral {
  readonly kind: 'defer';
  readonly reason: 'below_trigger' | 'does_not_pay' | 'summary_being_prepared' | 'nothing_to_reduce';
  readonly callAgainAt: number;
  readonly considered: readonly Candidate[];
  /** The best candidate considered, reported as `cost`. */
  readonly best: Candidate | undefined;
  readonly warning?: Warning;
}

/**
 * Defer; every stage while above the target (`ladder`: policy tokens; `forced`: above the limit);
 * compaction alone; compaction and a summary, made now or prepared and spliced in, `ifFailed` what
 * happens when the summary fails (undefined: the compaction stands).
 */
export type Decision =
  | Deferral
  | { readonly kind: 'ladder' | 'forced' | 'compact' }
  | { readonly kind: 'summarize'; readonly ifFailed: Deferral | undefined }
  | { readonly kind: 'splice'; readonly prepared: Spliceable; readonly ifFailed: Deferral | undefined };

/**
 * Fit's decision (STRATEGIES.md, "Fit" and "Cost"), pure. Policy tokens: above the target, every
 * stage. Policy cost: above the limit, every stage (forced); below it, the candidate whose saving
 * over the horizon most exceeds its cost, or nothing when none pays (`call_again_at`: when it will
 * pay or be forced). A summary that pays and is being prepared, or that nobody prepared yet (asked
 * for now: `withPrepare`), is left to a later call to splice: below the limit no agent waits on it.
 */
export function decide(m: Measurements): Decision {
  if (m.policy === 'tokens') {
    if (m.occupancy > m.target) return { kind: 'ladder' };
    return { kind: 'defer', reason: 'below_trigger', callAgainAt: m.target, considered: [], best: undefined };
  }
  if (m.forced) return { kind: 'forced' };
  const best = bestOf(m.candidates.filter((c) => worthIt(c.estimate, m.model)));
  if (!best) return deferral(m, m.candidates, 'does_not_pay');
  if (best.kind === 'compact') return { kind: 'compact' };
  // While a summary is being made the call waits for it; a client that keeps its whole history
  // gets again the one it was given (`resent`), its prefix kept, until the next is ready.
  if (m.pending && !m.resent) return deferral(m, m.candidates, 'summary_being_prepared');
  const compact = m.candidates[0];
  const compactPays = compact?.kind === 'compact' && worthIt(compact.estimate, m.model);
  // The summary that paid failed, and compaction alone does not pay: nothing changes.
  const ifFailed = compactPays ? undefined : deferral(m, m.candidates.slice(0, 1), 'does_not_pay');
  return m.ready ? { kind: 'splice', prepared: m.ready, ifFailed } : { kind: 'summarize', ifFailed };
}

/** Nothing pays yet (or the summary that does is being prepared): the best candidate is reported. */
function deferral(m: Measurements, considered: readonly Candidate[], why: 'does_not_pay' | 'summary_being_prepared'): Deferral {
  const best = bestOf(considered);
  const reason = best ? why : 'nothing_to_reduce';
  const warning: Warning | undefined =
    best && why === 'does_not_pay' ? { code: 'does_not_pay', message: deferralMessage(m.model, best) } : undefined;
  return { kind: 'defer', reason, callAgainAt: payingAt(m, best?.estimate), considered, best, ...(warning ? { warning } : {}) };
}

/** The candidate whose net saving is largest, among those given. */
function bestOf(candidates: readonly Candidate[]): Candidate | undefined {
  return candidates.reduce<Candidate | undefined>((a, c) => (!a || c.estimate.net > a.estimate.net ? c : a), undefined);
}

/** The occupancy at which a reduction that does not pay yet will (its deficit made up by more to clear) or be forced. */
export function payingAt(m: Pick<Measurements, 'model' | 'limit'>, best: Estimate | undefined): number {
  const { model } = m;
  const forcedAt = m.limit + 1;
  if (!best || best.saved <= 0) return forcedAt;
  const price = model.cache.source === 'disabled' ? model.prices.input : model.prices.cached;
  const perToken = (price * model.horizon) / 1_000_000;
  if (perToken <= 0) return forcedAt;
  const toPay = Math.ceil(Math.max(0, -best.net) / perToken);
  return Math.min(forcedAt, model.occupancy + Math.max(1, toPay, best.batch - best.saved));
}

/** Why the best candidate is not made: too small a batch, too long a bet for the run so far, or no pay over the horizon. */
function deferralMessage(model: CostModel, { kind, estimate: e }: Candidate): string {
  const what = `the best reduction (${kind}) would free ${e.saved} tokens and rewrite ${e.rewriteTokens} cached ones`;
  if (e.net > 0 && e.saved < e.batch)
    return `${what}: waiting until about ${e.batch} can be freed at once costs less per call; nothing was changed`;
  if (e.net > 0)
    return `${what}: it pays back in ${e.paybackCalls} calls, more than the ${model.calls} this run has made so far (less than even odds that it lasts that long); nothing was changed`;
  return `${what}: it pays back in ${e.paybackCalls ?? 'no number of'} calls, over the ${model.horizon} expected; nothing was changed`;
}
