import type { ReasonCode } from '../../contract/codes.js';
import type { CostModel } from '../../cost/estimate.js';
import type { CostRequest } from '../../cost/fields.js';
import type { CostReport } from '../../cost/model.js';
import type { ErrorCode } from '../../errors.js';
import type { Applied } from '../../history/plan/apply.js';
import { plannedUsage, pricedResult } from '../priced.js';
import { type Dropped, WindowOptions, windowAbove } from '../sliding-window.js';
import { type SummarizeExtra, SummarizeOptions, summarizeStrategy } from '../summarize/index.js';
import type { StrategyContext, StrategyResult } from '../types.js';
import type { FitExtra, FitOptions } from './options.js';
import { type Pipeline, writtenEnd } from './pipeline.js';

/** What the summarize stage left: its result, where what it wrote ends, and whether it was only planned (a dry run). */
export interface Summarized {
  result: StrategyResult<SummarizeExtra> | undefined;
  failure: ErrorCode | undefined;
  /** The window keeps everything before this position of its view. */
  end: number;
  planned: boolean;
}

/** The summarize stage's options: fit's `summarize`, a failure kept (or answered as the error). */
export function summarizeOptions(o: FitOptions): SummarizeOptions {
  const onFailure = o.summarize?.on_failure === 'error' ? 'error' : 'keep';
  return SummarizeOptions.parse({ ...o.summarize, on_failure: onFailure });
}

/**
 * The summarize stage, only while above the target. A failure leaves the history as it was and
 * the window stands in (`fallback`), unless the request asked for the error (`on_failure: error`).
 * A dry run knows what the summary would replace, not the summary itself: it is planned (an
 * estimate), and nothing after it is guessed.
 */
export async function summarizeStage(p: Pipeline, o: FitOptions, target: number, ctx: StrategyContext): Promise<Summarized> {
  const out: Summarized = { result: undefined, failure: undefined, end: p.view.head, planned: false };
  if (p.occupancy <= target) return out;
  const before = p.view;
  // What the compaction stage offloaded is not stored yet: the summary's trail reads it from here.
  const offloaded = p.composed.plan.artifacts;
  const pending = offloaded.length > 0 ? new Map(offloaded.map((a) => [a.id, a.value])) : ctx.pending;
  const m = p.measure(await summarizeStrategy.run(before, summarizeOptions(o), { ...ctx, pending }));
  out.failure = m.result.failure;
  if (!p.take('summarize', m)) return out;
  out.result = m.result;
  if (m.applied && m.result.plan) out.end = writtenEnd(m.applied, m.result.plan, before.head);
  if (ctx.dryRun) {
    out.planned = true;
    p.markPlanned();
  }
  return out;
}

/**
 * The window stage, the last resort: when the summarizer failed or the history is still above. It
 * never drops the summary (nor what precedes it): that is the history's oldest part, already
 * compressed. By default a token budget that meets the target.
 */
export function windowStage(p: Pipeline, o: FitOptions, target: number, floor: number): Dropped | null {
  const fixed = p.occupancy - p.view.counts.reduce((a, b) => a + b, 0);
  const keep = o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
  const windowed = windowAbove(p.view, WindowOptions.parse({ ...o.window, keep }), floor);
  return p.take('window', p.measure(windowed)) ? windowed.extra(undefined).dropped : null;
}

/**
 * The window where the summarizer failed or the history is still above the target, and the
 * warning when the target cannot be met. Not after a planned (dry-run) summary: what follows it
 * depends on its real size.
 */
export function lastResort(
  p: Pipeline,
  o: FitOptions,
  target: number,
  summarized: Summarized,
): {
  dropped: Dropped | null;
  fallback: StrategyResult<FitExtra>['fallback'];
} {
  let dropped: Dropped | null = null;
  let fallback: StrategyResult<FitExtra>['fallback'];
  if ((p.occupancy > target || summarized.failure) && !summarized.planned) {
    dropped = windowStage(p, o, target, summarized.end);
    if (dropped && summarized.failure) fallback = { from: 'summarize', to: 'window', reason: summarized.failure };
  }
  if (p.occupancy > target && !summarized.planned) {
    const summary = summarized.result?.extra(undefined).summary ? 'the summary ' : '';
    p.warnings.push({
      code: 'target_not_met',
      message: `occupancy is ${p.occupancy}, over the target ${target}: the rest is the head, the first user message, ${summary}and the newest group, which no strategy may remove`,
    });
  }
  return { dropped, fallback };
}

/** How a fit ended: its decision, the occupancy to call again at, and what it dropped or fell back to. */
export interface Ending {
  readonly decision: CostReport['decision'];
  readonly callAgainAt: number;
  readonly summarized?: Summarized;
  readonly dropped?: Dropped | null;
  readonly fallback?: StrategyResult<FitExtra>['fallback'];
  /** A result without a plan: why nothing changes, and the cost reported for it. */
  readonly reason?: ReasonCode;
  readonly cost?: CostReport;
}

/**
 * Fit's answer from its pipeline: the composed plan, the stages, the bill, and a `cost` priced on
 * the plan as applied (the summarizer at what it billed), or the one given when nothing changes.
 */
export function fitResult(
  p: Pipeline,
  target: number,
  model: CostModel,
  o: CostRequest & { limit?: unknown },
  limit: number,
  end: Ending,
): StrategyResult<FitExtra> {
  const base = (applied: Applied | undefined, cost: CostReport, s?: SummarizeExtra): FitExtra => ({
    stages: p.stages,
    target,
    artifacts: applied?.artifacts ?? [],
    summary: s?.summary ?? null,
    dropped: end.dropped ?? null,
    call_again_at: end.callAgainAt,
    cost,
    ...(s?.plan ? { plan: s.plan } : {}),
  });
  const planned = end.summarized?.planned === true;
  if (end.reason || (p.stages.every((s) => !s.applied) && !planned)) {
    const idle = pricedResult(model, o, undefined, { limit });
    const cost = end.cost ?? (end.decision === 'forced' ? { ...idle, decision: end.decision } : idle);
    return {
      warnings: p.warnings,
      reason: end.reason ?? 'nothing_to_reduce',
      usage: p.usage,
      ...(p.failure ? { failure: p.failure } : {}),
      extra: () => base(undefined, cost),
    };
  }
  const plan = p.composed.plan;
  return {
    plan,
    warnings: p.warnings,
    bestEffort: p.bestEffort,
    usage: p.usage,
    ...(end.fallback ? { fallback: end.fallback } : {}),
    ...(p.failure ? { failure: p.failure } : {}),
    extra: (applied) => {
      const s = end.summarized?.result?.extra(applied);
      // A dry run's summary is not written: its calls are priced as planned.
      const usage = plan.unwritten && s?.plan ? plannedUsage(s.plan, plan.unwritten.tokens) : p.usage;
      const cost = applied
        ? { ...pricedResult(model, o, { plan, applied, usage }, { limit }), decision: end.decision }
        : (end.cost ?? pricedResult(model, o, undefined, { limit }));
      return base(applied, cost, s);
    },
  };
}
