import { type Estimate, estimate, usageCost, worthIt } from '../../cost/estimate.js';
import { costReport, nothingEstimate } from '../../cost/model.js';
import { applyPlan } from '../../history/plan/apply.js';
import { compose, identity } from '../../history/plan/compose.js';
import { evaluatePlan } from '../../history/plan/evaluate.js';
import { viewOf } from '../../history/plan/view.js';
import { plannedUsage } from '../priced.js';
import { summarizeStrategy } from '../summarize/index.js';
import type { StrategyResult } from '../types.js';
import { type FitExtra, summarizeOptions } from './options.js';
import { beingPrepared, preparing, spliceable, toPrepare } from './prepare.js';
import { finish } from './result.js';
import type { FitRun } from './run.js';
import { compaction, compactStage, refoldStage, runStages, summarizeStage, windowStage } from './stages.js';

/** A reduction fit could make, priced: compaction alone, or compaction then a summary. */
interface Candidate {
  readonly kind: 'compact' | 'summarize';
  readonly estimate: Estimate;
}

/**
 * The summary candidate: the summarize stage planned as a dry run over what compaction leaves,
 * composed with it into one plan over the input and priced, its summarizer calls at their planned
 * input and the summary at its budget.
 */
async function summaryCandidate(run: FitRun): Promise<Candidate | undefined> {
  const { h, model } = run;
  const compacted = await compaction(run);
  const view = compacted.applied ? viewOf(h, compacted.applied, h.occupancy - compacted.freed) : h;
  // A summary prepared for this range costs nothing more: its bill is sunk.
  const splice = await spliceable(run, view, summarizeOptions(run.o), false);
  const options = splice?.options ?? summarizeOptions(run.o);
  const dry = await summarizeStrategy.run(view, options, { ...run.ctx, dryRun: true });
  if (!dry.plan || dry.reason) return undefined;
  const first =
    compacted.result.plan && compacted.applied
      ? compose(identity(h.messages.length), compacted.result.plan, compacted.applied)
      : identity(h.messages.length);
  const composed = compose(first, dry.plan, applyPlan(view, dry.plan, run.count));
  const calls = dry.extra(undefined).plan;
  const unwritten = composed.plan.unwritten?.tokens ?? 0;
  const summarizer = calls && !splice ? usageCost(model.summarizer, plannedUsage(calls, unwritten)) : 0;
  const e = estimate(model, evaluatePlan(composed.plan, applyPlan(h, composed.plan, run.count)), summarizer);
  return { kind: 'summarize', estimate: e };
}

/** The candidates under the limit: compaction clearing all it may, and that plus a summary when compaction leaves the history above the target. */
async function candidatesOf(run: FitRun): Promise<Candidate[]> {
  const compacted = await compaction(run);
  const candidates: Candidate[] = [];
  if (compacted.evaluation) candidates.push({ kind: 'compact', estimate: estimate(run.model, compacted.evaluation, 0) });
  if (run.h.occupancy - compacted.freed > run.target) {
    const summary = await summaryCandidate(run);
    if (summary) candidates.push(summary);
  }
  return candidates;
}

/** The candidate whose net saving is largest, among those given. */
function bestOf(candidates: readonly Candidate[]): Candidate | undefined {
  return candidates.reduce<Candidate | undefined>((a, c) => (!a || c.estimate.net > a.estimate.net ? c : a), undefined);
}

/** The occupancy at which a reduction that does not pay yet will (its deficit made up by more to clear) or be forced. */
function payingAt(run: FitRun, best: Estimate | undefined): number {
  const { model } = run;
  const forcedAt = run.limit + 1;
  if (!best || best.saved <= 0) return forcedAt;
  const price = model.cache.source === 'disabled' ? model.prices.input : model.prices.cached;
  const perToken = (price * model.horizon) / 1_000_000;
  if (perToken <= 0) return forcedAt;
  const toPay = Math.ceil(Math.max(0, -best.net) / perToken);
  return Math.min(forcedAt, model.occupancy + Math.max(1, toPay, best.batch - best.saved));
}

/**
 * The occupancy at which a summary is expected to be made: where the summary candidate pays (or
 * is forced); without one (compaction leaves the history under the target), the later of where
 * the history would cross the target after compaction and, while preparing, where a summary
 * priced now would pay. Prepared summaries are timed from it.
 */
async function summaryDueAt(run: FitRun, candidates: readonly Candidate[]): Promise<number> {
  const summary = candidates.find((c) => c.kind === 'summarize');
  if (summary) return payingAt(run, summary.estimate);
  // Under the target after compaction: no summary before the history crosses it, nor before one
  // pays (priced as if the target allowed it, only while a prepared one could be asked for).
  const crossing = Math.min(run.limit + 1, run.target + 1 + (await compaction(run)).freed);
  const priced = preparing(run) && 2 * run.h.occupancy >= run.target ? await summaryCandidate(run) : undefined;
  return priced ? Math.max(crossing, payingAt(run, priced.estimate)) : crossing;
}

/** Why the best candidate is not made: too small a batch, too long a bet for the run so far, or no pay over the horizon. */
function deferralMessage(kind: Candidate['kind'], e: Estimate, run: FitRun): string {
  const what = `the best reduction (${kind}) would free ${e.saved} tokens and rewrite ${e.rewriteTokens} cached ones`;
  if (e.net > 0 && e.saved < e.batch)
    return `${what}: waiting until about ${e.batch} can be freed at once costs less per call; nothing was changed`;
  if (e.net > 0)
    return `${what}: it pays back in ${e.paybackCalls} calls, more than the ${run.model.calls} this run has made so far (less than even odds that it lasts that long); nothing was changed`;
  return `${what}: it pays back in ${e.paybackCalls ?? 'no number of'} calls, over the ${run.model.horizon} expected; nothing was changed`;
}

/** Nothing pays yet: the best candidate is reported, and each stage considered says so. */
function deferred(
  run: FitRun,
  candidates: readonly Candidate[],
  why: 'does_not_pay' | 'summary_being_prepared' = 'does_not_pay',
): StrategyResult<FitExtra> {
  const best = bestOf(candidates);
  const e = best?.estimate ?? nothingEstimate(run.model);
  for (const c of candidates) {
    const usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0, model: null, total_tokens: 0 };
    run.stages.push({ strategy: c.kind, applied: false, tokens_after: run.model.occupancy, reason: why, usage });
  }
  if (best && why === 'does_not_pay') run.warnings.push({ code: 'does_not_pay', message: deferralMessage(best.kind, e, run) });
  return finish(run, {
    decision: 'defer',
    callAgainAt: payingAt(run, best?.estimate),
    reason: best ? why : 'nothing_to_reduce',
    cost: costReport(run.model, e, 'defer', run.o, { limit: run.limit }),
  });
}

/**
 * Fit under `policy: cost` (docs/strategies.md, "Cost"). Above `limit` a reduction is forced: compact
 * everything clearable, summarize if still above the target, window as the last resort. Under
 * the limit, at any occupancy, the candidates (compaction clearing all it may; that plus a summary
 * when compaction leaves the history above the target) are priced with the prompt cache in view,
 * and the one whose saving over the horizon most exceeds what it costs is made; when none pays,
 * nothing changes (`does_not_pay`) and `call_again_at` says when it will pay or be forced.
 * Deterministic: a function of the request alone.
 */
export async function costFit(run: FitRun): Promise<StrategyResult<FitExtra>> {
  const after = () => Math.max(run.target, Math.min(run.limit + 1, Math.ceil(run.occupancy * 1.1)));
  if (run.forced) {
    await runStages(run, [compactStage, summarizeStage, refoldStage, windowStage]);
    return finish(run, { decision: 'forced', callAgainAt: after() });
  }
  const candidates = await candidatesOf(run);
  run.summaryDueAt = await summaryDueAt(run, candidates);
  const best = bestOf(candidates.filter((c) => worthIt(c.estimate, run.model)));
  if (!best) return deferred(run, candidates);
  // The summary that pays is being prepared in the background for this history: wait for it (a
  // later call splices it) rather than pay for it twice on the request path.
  // One that nobody prepared yet is asked for now (`withPrepare`), and a later call splices it:
  // below the limit, the agent never waits on the summarizer.
  if (best.kind === 'summarize' && (beingPrepared(run, run.h) || (await toPrepare(run)))) {
    return deferred(run, candidates, 'summary_being_prepared');
  }
  if (best.kind === 'compact') {
    await runStages(run, [compactStage]);
    return finish(run, { decision: 'reduce', callAgainAt: after() });
  }
  await runStages(run, [compactStage, summarizeStage]);
  const compactPays = candidates[0]?.kind === 'compact' && worthIt(candidates[0].estimate, run.model);
  if (run.summarized.failure && !compactPays) {
    // The summary that paid failed, and compaction alone does not pay: nothing changes.
    run.restart();
    return deferred(run, candidates.slice(0, 1));
  }
  return finish(run, { decision: 'reduce', callAgainAt: after() });
}
