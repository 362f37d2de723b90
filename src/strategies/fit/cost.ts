import { type CostModel, type Estimate, estimate, usageCost, worthIt } from '../../cost/estimate.js';
import { costReport, nothingEstimate } from '../../cost/model.js';
import { applyPlan } from '../../history/plan/apply.js';
import { compose, identity } from '../../history/plan/compose.js';
import { evaluatePlan } from '../../history/plan/evaluate.js';
import { viewOf } from '../../history/plan/view.js';
import { CompactOptions, compactStrategy } from '../compact.js';
import { modelFor, plannedUsage } from '../priced.js';
import { summarizeStrategy } from '../summarize/index.js';
import type { PreparedHistory, StrategyContext, StrategyResult } from '../types.js';
import { type FitExtra, type FitOptions, limitOf } from './options.js';
import { type Measured, Pipeline } from './pipeline.js';
import { fitResult, lastResort, summarizeOptions, summarizeStage } from './stages.js';

/** A reduction fit could make, priced: compaction alone, or compaction then a summary. */
interface Candidate {
  readonly kind: 'compact' | 'summarize';
  readonly estimate: Estimate;
}

/**
 * Compaction under policy cost clears everything it may at once (the batch rule: once the cache
 * is broken at the first cleared result, clearing more after it costs nothing more), so neither
 * a target nor `clear_at_least` stops it: fit decides whether it pays.
 */
function batchCompaction(o: FitOptions): CompactOptions {
  return CompactOptions.parse({ ...o.compact, target_tokens: undefined, clear_at_least: undefined });
}

/**
 * The summary candidate: the summarize stage planned as a dry run over what compaction leaves,
 * composed with it into one plan over the input and priced, its summarizer calls at their planned
 * input and the summary at its budget.
 */
async function summaryCandidate(
  p: Pipeline,
  compacted: Measured<unknown>,
  o: FitOptions,
  ctx: StrategyContext,
  model: CostModel,
): Promise<Candidate | undefined> {
  const h = p.h;
  const view = compacted.applied ? viewOf(h, compacted.applied, h.occupancy - compacted.freed) : h;
  const dry = await summarizeStrategy.run(view, summarizeOptions(o), { ...ctx, dryRun: true });
  if (!dry.plan || dry.reason) return undefined;
  const first =
    compacted.result.plan && compacted.applied
      ? compose(identity(h.messages.length), compacted.result.plan, compacted.applied)
      : identity(h.messages.length);
  const composed = compose(first, dry.plan, applyPlan(view, dry.plan, p.count));
  const calls = dry.extra(undefined).plan;
  const unwritten = composed.plan.unwritten?.tokens ?? 0;
  const summarizer = calls ? usageCost(model.summarizer, plannedUsage(calls, unwritten)) : 0;
  const e = estimate(model, evaluatePlan(composed.plan, applyPlan(h, composed.plan, p.count)), summarizer);
  return { kind: 'summarize', estimate: e };
}

/** The occupancy at which a reduction that does not pay yet will (its deficit made up by more to clear) or be forced. */
function payingAt(model: CostModel, best: Estimate | undefined, limit: number): number {
  const forcedAt = limit + 1;
  if (!best || best.saved <= 0) return forcedAt;
  const price = model.cache.source === 'disabled' ? model.prices.input : model.prices.cached;
  const perToken = (price * model.horizon) / 1_000_000;
  if (perToken <= 0) return forcedAt;
  const toPay = Math.ceil(Math.max(0, -best.net) / perToken);
  return Math.min(forcedAt, model.occupancy + Math.max(1, toPay, best.batch - best.saved));
}

/** Why the best candidate is not made: too small a batch, too long a bet for the run so far, or no pay over the horizon. */
function deferralMessage(kind: Candidate['kind'], e: Estimate, model: CostModel): string {
  const what = `the best reduction (${kind}) would free ${e.saved} tokens and rewrite ${e.rewriteTokens} cached ones`;
  if (e.net > 0 && e.saved < e.batch)
    return `${what}: waiting until about ${e.batch} can be freed at once costs less per call; nothing was changed`;
  if (e.net > 0)
    return `${what}: it pays back in ${e.paybackCalls} calls, more than the ${model.calls} this run has made so far (less than even odds that it lasts that long); nothing was changed`;
  return `${what}: it pays back in ${e.paybackCalls ?? 'no number of'} calls, over the ${model.horizon} expected; nothing was changed`;
}

/** Nothing pays yet: the best candidate is reported, and each stage considered says so. */
function deferred(p: Pipeline, target: number, model: CostModel, o: FitOptions, limit: number, candidates: Candidate[]) {
  const best = candidates.reduce<Candidate | undefined>((a, c) => (!a || c.estimate.net > a.estimate.net ? c : a), undefined);
  const e = best?.estimate ?? nothingEstimate(model);
  for (const c of candidates) {
    const usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, calls: 0, model: null, total_tokens: 0 };
    p.stages.push({ strategy: c.kind, applied: false, tokens_after: model.occupancy, reason: 'does_not_pay', usage });
  }
  if (best) {
    p.warnings.push({
      code: 'does_not_pay',
      message: deferralMessage(best.kind, e, model),
    });
  }
  return fitResult(p, target, model, o, limit, {
    decision: 'defer',
    callAgainAt: payingAt(model, best?.estimate, limit),
    reason: best ? 'does_not_pay' : 'nothing_to_reduce',
    cost: costReport(model, e, 'defer', o, { limit }),
  });
}

/**
 * Fit under `policy: cost` (STRATEGIES.md, "Cost"). Above `limit` a reduction is forced: compact
 * everything clearable, summarize if still above the target, window as the last resort. Under
 * the limit, at any occupancy, the candidates (compaction clearing all it may; that plus a summary
 * when compaction leaves the history above the target) are priced with the prompt cache in view,
 * and the one whose saving over the horizon most exceeds what it costs is made; when none pays,
 * nothing changes (`does_not_pay`) and `call_again_at` says when it will pay or be forced.
 * Deterministic: a function of the request alone.
 */
export async function costFit(
  h: PreparedHistory,
  o: FitOptions,
  ctx: StrategyContext,
  target: number,
): Promise<StrategyResult<FitExtra>> {
  const model = modelFor(h, o, ctx, ctx.summarizer?.model?.(o.summarize?.summarizer?.model) ?? null);
  const limit = limitOf(o, ctx.profile, target);
  const p = new Pipeline(h, ctx, 0);
  const forced = h.occupancy > limit;
  const compacted = p.measure(await compactStrategy.run(h, batchCompaction(o), ctx));
  const after = () => Math.max(target, Math.min(limit + 1, Math.ceil(p.occupancy * 1.1)));
  if (forced) {
    p.take('compact', compacted);
    const summarized = await summarizeStage(p, o, target, ctx);
    const { dropped, fallback } = lastResort(p, o, target, summarized);
    return fitResult(p, target, model, o, limit, { decision: 'forced', callAgainAt: after(), summarized, dropped, fallback });
  }
  const candidates: Candidate[] = [];
  if (compacted.evaluation) candidates.push({ kind: 'compact', estimate: estimate(model, compacted.evaluation, 0) });
  if (h.occupancy - compacted.freed > target) {
    const summary = await summaryCandidate(p, compacted, o, ctx, model);
    if (summary) candidates.push(summary);
  }
  const best = candidates
    .filter((c) => worthIt(c.estimate, model))
    .reduce<Candidate | undefined>((a, c) => (!a || c.estimate.net > a.estimate.net ? c : a), undefined);
  if (!best) return deferred(p, target, model, o, limit, candidates);
  p.take('compact', compacted);
  if (best.kind === 'compact') return fitResult(p, target, model, o, limit, { decision: 'reduce', callAgainAt: after() });
  const summarized = await summarizeStage(p, o, target, ctx);
  const compactPays = candidates[0]?.kind === 'compact' && worthIt(candidates[0].estimate, model);
  if (summarized.failure && !compactPays) {
    // The summary that paid failed, and compaction alone does not pay: nothing changes.
    const clean = new Pipeline(h, ctx, 0);
    clean.warnings.push(...p.warnings);
    clean.failure = p.failure;
    return deferred(clean, target, model, o, limit, candidates.slice(0, 1));
  }
  return fitResult(p, target, model, o, limit, { decision: 'reduce', callAgainAt: after(), summarized });
}
