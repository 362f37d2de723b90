import type { ReasonCode } from '../../contract/codes.js';
import { type CostReport, costReport, nothingEstimate } from '../../cost/model.js';
import type { Applied } from '../../history/plan/apply.js';
import { plannedUsage, pricedResult } from '../priced.js';
import type { SummarizeExtra } from '../summarize/index.js';
import { NO_BILLED, type PrepareRequest, type StrategyResult, withTotal } from '../types.js';
import type { FitContext } from './context.js';
import type { Deferral } from './decide.js';
import type { FitExtra } from './options.js';
import type { Pipeline } from './pipeline.js';

/** Fit's answer: a strategy's, and what the service does off the request path (not response fields; never in a dry run). */
export interface FitResult extends StrategyResult<FitExtra> {
  /** A summary to prepare off the request path. */
  prepare?: PrepareRequest;
  /** The prepared summary this result spliced in: its id, for the service to count and bill once. */
  spliced?: string;
  /** With `spliced`: the length of the history it was spliced into (`PreparedEntry.splicedAt`). */
  splicedAt?: number;
}

/** How a fit ended: its decision and the occupancy to call again at; without a plan, why and at what cost. */
type Ending = { decision: CostReport['decision']; callAgainAt: number; reason?: ReasonCode; cost?: CostReport };

/** Nothing changes: each candidate considered is a stage not applied, the best one is the `cost`. */
export function deferred(c: FitContext, acc: Pipeline, d: Deferral): FitResult {
  const usage = withTotal(NO_BILLED);
  const considered = d.considered.map((k) => ({
    strategy: k.kind,
    applied: false,
    tokens_after: c.model.occupancy,
    reason: d.reason,
    usage,
  }));
  const cost = costReport(c.model, d.best?.estimate ?? nothingEstimate(c.model), 'defer', c.o, { limit: c.limit });
  const done = { ...acc, stages: [...acc.stages, ...considered], warnings: [...acc.warnings, ...(d.warning ? [d.warning] : [])] };
  return finish(c, done, { decision: 'defer', callAgainAt: d.callAgainAt, reason: d.reason, cost });
}

/**
 * Fit's answer from its pipeline: the composed plan, the stages, the bill, and a `cost` priced on
 * the plan as applied (the summarizer at what it billed), or the one given when nothing changes.
 */
export function finish(c: FitContext, acc: Pipeline, end: Ending): FitResult {
  const { model, o } = c;
  const { summarized } = acc;
  const limit = { limit: c.limit };
  const base = (applied: Applied | undefined, cost: CostReport, s?: SummarizeExtra): FitExtra => ({
    stages: [...acc.stages],
    target: c.target,
    artifacts: applied?.artifacts ?? [],
    summary: s?.summary ?? null,
    dropped: acc.dropped,
    call_again_at: end.callAgainAt,
    cost,
    ...(s?.plan ? { plan: s.plan } : {}),
  });
  const failure = acc.failure ? { failure: acc.failure } : {};
  if (end.reason || (acc.stages.every((s) => !s.applied) && !summarized.planned)) {
    const idle = pricedResult(model, o, undefined, limit);
    const cost = end.cost ?? (end.decision === 'forced' ? { ...idle, decision: end.decision } : idle);
    const reason = end.reason ?? 'nothing_to_reduce';
    return { warnings: [...acc.warnings], reason, usage: acc.usage, ...failure, extra: () => base(undefined, cost) };
  }
  const plan = acc.composed.plan;
  return {
    plan,
    warnings: [...acc.warnings],
    bestEffort: [...acc.bestEffort],
    usage: acc.usage,
    ...(acc.fallback ? { fallback: acc.fallback } : {}),
    ...failure,
    extra: (applied, billed) => {
      const s = summarized.result?.extra(applied);
      // A dry run's summary is not written: its calls are priced as planned; a prepared summary
      // billed to another response costs nothing here.
      const usage = plan.unwritten && s?.plan ? plannedUsage(s.plan, plan.unwritten.tokens) : (billed ?? acc.usage);
      const cost = applied
        ? { ...pricedResult(model, o, { plan, applied, usage }, limit), decision: end.decision }
        : (end.cost ?? pricedResult(model, o, undefined, limit));
      return base(applied, cost, s);
    },
  };
}
