import { type CostModel, estimate, usageCost } from '../cost/estimate.js';
import type { CostRequest } from '../cost/fields.js';
import { type CostReport, costModel, costReport, nothingEstimate } from '../cost/model.js';
import type { Applied } from '../history/plan/apply.js';
import { evaluatePlan } from '../history/plan/evaluate.js';
import type { Plan } from '../history/plan/types.js';
import type { SummaryPlan } from '../summarizers/types.js';
import type { BilledUsage, PreparedHistory, StrategyContext } from './types.js';

/** Whether a compact or summarize request asked for its cost: it gave pricing or the previous call's usage. */
export function costAsked(o: CostRequest, ctx: Pick<StrategyContext, 'cost'>): boolean {
  return o.pricing !== undefined || ctx.cost.usage !== undefined;
}

/** What a dry run's planned summarizer calls would bill: their input, and the summaries at their budget. */
export function plannedUsage(plan: SummaryPlan, outputTokens: number): BilledUsage {
  const input = plan.calls.reduce((sum, c) => sum + c.input_tokens, 0);
  return {
    input_tokens: input,
    output_tokens: outputTokens,
    cached_input_tokens: 0,
    calls: plan.calls.length,
    model: plan.model,
  };
}

/** A request's cost model (the summarizer priced by the model it uses). */
export function modelFor(
  h: PreparedHistory,
  o: CostRequest,
  ctx: Pick<StrategyContext, 'cost'>,
  summarizerModel: string | null = null,
): CostModel {
  return costModel(h, o, ctx.cost, summarizerModel);
}

/**
 * The `cost` of what a strategy did: its plan as applied, priced, with what its summarizer calls
 * billed; or, with nothing applied, the coming call as is (`defer`).
 */
export function pricedResult(
  model: CostModel,
  o: CostRequest,
  done: { plan: Plan; applied: Applied; usage?: BilledUsage | undefined } | undefined,
  more: { break_even_tokens?: number; limit?: number } = {},
): CostReport {
  if (!done) return costReport(model, nothingEstimate(model), 'defer', o, more);
  const summarizer = done.usage ? usageCost(model.summarizer, done.usage) : 0;
  return costReport(model, estimate(model, evaluatePlan(done.plan, done.applied), summarizer), 'reduce', o, more);
}
