import type { ReasonCode } from '../../contract/codes.js';
import type { CostReport } from '../../cost/model.js';
import type { Applied } from '../../history/plan/apply.js';
import { plannedUsage, pricedResult } from '../priced.js';
import type { SummarizeExtra } from '../summarize/index.js';
import type { StrategyResult } from '../types.js';
import type { FitExtra } from './options.js';
import type { FitRun } from './run.js';

/** How a fit ended: its decision and the occupancy to call again at; without a plan, why and at what cost. */
export interface Ending {
  readonly decision: CostReport['decision'];
  readonly callAgainAt: number;
  /** A result without a plan: why nothing changes, and the cost reported for it. */
  readonly reason?: ReasonCode;
  readonly cost?: CostReport;
}

/**
 * Fit's answer from its run: the composed plan, the stages, the bill, and a `cost` priced on the
 * plan as applied (the summarizer at what it billed), or the one given when nothing changes.
 */
export function finish(run: FitRun, end: Ending): StrategyResult<FitExtra> {
  const { model, o, summarized } = run;
  const limit = { limit: run.limit };
  const base = (applied: Applied | undefined, cost: CostReport, s?: SummarizeExtra): FitExtra => ({
    stages: run.stages,
    target: run.target,
    artifacts: applied?.artifacts ?? [],
    summary: s?.summary ?? null,
    dropped: run.dropped,
    call_again_at: end.callAgainAt,
    cost,
    ...(s?.plan ? { plan: s.plan } : {}),
  });
  if (end.reason || (run.stages.every((s) => !s.applied) && !summarized.planned)) {
    const idle = pricedResult(model, o, undefined, limit);
    const cost = end.cost ?? (end.decision === 'forced' ? { ...idle, decision: end.decision } : idle);
    return {
      warnings: run.warnings,
      reason: end.reason ?? 'nothing_to_reduce',
      usage: run.usage,
      ...(run.failure ? { failure: run.failure } : {}),
      extra: () => base(undefined, cost),
    };
  }
  const plan = run.composed.plan;
  return {
    plan,
    warnings: run.warnings,
    bestEffort: run.bestEffort,
    usage: run.usage,
    ...(run.fallback ? { fallback: run.fallback } : {}),
    ...(run.failure ? { failure: run.failure } : {}),
    extra: (applied) => {
      const s = summarized.result?.extra(applied);
      // A dry run's summary is not written: its calls are priced as planned.
      const usage = plan.unwritten && s?.plan ? plannedUsage(s.plan, plan.unwritten.tokens) : run.usage;
      const cost = applied
        ? { ...pricedResult(model, o, { plan, applied, usage }, limit), decision: end.decision }
        : (end.cost ?? pricedResult(model, o, undefined, limit));
      return base(applied, cost, s);
    },
  };
}
