import type { CostModel } from '../../cost/estimate.js';
import type { ErrorCode } from '../../errors.js';
import { type Applied, applyPlan, type Count } from '../../history/plan/apply.js';
import { type Composed, compose, identity } from '../../history/plan/compose.js';
import { type Evaluation, evaluatePlan } from '../../history/plan/evaluate.js';
import type { Plan } from '../../history/plan/types.js';
import { viewOf } from '../../history/plan/view.js';
import type { Warning } from '../../history/types.js';
import type { NewArtifact } from '../../store/types.js';
import { addUsage } from '../../summarizers/types.js';
import { modelFor } from '../priced.js';
import type { Dropped } from '../sliding-window.js';
import type { SummarizeExtra } from '../summarize/index.js';
import {
  type BilledUsage,
  countWith,
  NO_BILLED,
  type PreparedContext,
  type PreparedHistory,
  type StrategyContext,
  type StrategyResult,
  withTotal,
} from '../types.js';
import { type FitExtra, type FitOptions, limitOf, type Stage, targetOf } from './options.js';

/** One stage's result on the current view: its plan (over the view), measured there. */
export interface Measured<E> {
  readonly result: StrategyResult<E>;
  readonly applied: Applied | undefined;
  /** Tokens the stage frees, net of what it writes (summaries estimated at their budget in a dry run). */
  readonly freed: number;
  readonly evaluation: Evaluation | undefined;
}

/** What the summarize stage left: its result, where what it wrote ends, whether it was only planned (a dry run). */
export interface Summarized {
  result: StrategyResult<SummarizeExtra> | undefined;
  failure: ErrorCode | undefined;
  /** The window keeps everything before this position of its view. */
  end: number;
  planned: boolean;
}

/** Two stages' usage summed; the model is the last one billed; a prepared summary spliced in stays reported. */
function addBilled(a: BilledUsage, b: BilledUsage | undefined): BilledUsage {
  return b ? { ...addUsage(a, b), model: b.model ?? a.model, ...(a.prepared ? { prepared: a.prepared } : {}) } : a;
}

/**
 * One fit request, resolved once: its options, target, limit and cost model; and the pipeline
 * its stages build. Each stage plans over the view the previous ones leave (`view`), is measured
 * there, and when taken its plan is composed into one plan over the input (`composed.plan`),
 * applied once at the end (`Compactor.run`). Occupancy, the bill, the stage records and what the
 * summarize and window stages did follow.
 */
export class FitRun {
  readonly h: PreparedHistory;
  readonly o: FitOptions;
  readonly ctx: StrategyContext;
  /** The occupancy a reduction aims under. */
  readonly target: number;
  /** Policy cost: the occupancy a call must never exceed (above it, a reduction is forced). */
  readonly limit: number;
  /** The request's prices, cache state and horizon. */
  readonly model: CostModel;
  readonly count: Count;
  composed: Composed;
  view: PreparedHistory;
  occupancy: number;
  usage: BilledUsage = NO_BILLED;
  stages: Stage[] = [];
  readonly warnings: Warning[] = [];
  bestEffort: NewArtifact[] = [];
  /** The error code of a summarizer failure a stage recovered from (reported with its warning; kept by `restart`). */
  failure: ErrorCode | undefined;
  summarized: Summarized;
  /** The compaction stage's result, once planned (`compaction`). */
  compacted: Measured<unknown> | undefined;
  dropped: Dropped | null = null;
  /** The prepared summary the summarize stage spliced in (`splice`). */
  spliced: PreparedContext['entries'][number] | undefined;
  /** Policy cost: the occupancy at which a summary is expected to pay (or be forced), once priced. */
  summaryDueAt: number | undefined;
  fallback: StrategyResult<FitExtra>['fallback'];
  /** A stage that would free less than this is skipped (policy tokens). */
  private readonly minSaving: number;

  constructor(h: PreparedHistory, o: FitOptions, ctx: StrategyContext) {
    this.h = h;
    this.o = o;
    this.ctx = ctx;
    this.target = targetOf(o, ctx.profile);
    this.limit = limitOf(o, ctx.profile, this.target);
    this.model = modelFor(h, o, ctx, ctx.summarizer?.model?.(o.summarize?.summarizer?.model) ?? null);
    this.count = countWith(h, ctx);
    this.minSaving = o.policy === 'tokens' ? o.min_saving_fraction * h.occupancy : 0;
    this.composed = identity(h.messages.length);
    this.view = h;
    this.occupancy = h.occupancy;
    this.summarized = { result: undefined, failure: undefined, end: h.head, planned: false };
  }

  /** Whether a reduction is forced now: policy cost, above the limit. */
  get forced(): boolean {
    return this.h.occupancy > this.limit;
  }

  /** Drops every stage taken (their plans, bill and records); the warnings and the failure stay. */
  restart(): void {
    this.composed = identity(this.h.messages.length);
    this.view = this.h;
    this.occupancy = this.h.occupancy;
    this.usage = NO_BILLED;
    this.stages = [];
    this.bestEffort = [];
  }

  /** A stage's result measured on the current view. */
  measure<E>(result: StrategyResult<E>): Measured<E> {
    if (!result.plan || result.reason) return { result, applied: undefined, freed: 0, evaluation: undefined };
    const applied = applyPlan(this.view, result.plan, this.count);
    const evaluation = evaluatePlan(result.plan, applied);
    return { result, applied, freed: evaluation.saved, evaluation };
  }

  /** Takes a stage if it frees enough (composing its plan), records it either way; returns whether it was taken. */
  take<E>(strategy: Stage['strategy'], m: Measured<E>): boolean {
    const out = m.result;
    this.usage = addBilled(this.usage, out.usage);
    let reason = out.reason;
    if (!reason && m.freed < this.minSaving) {
      reason = 'saving_too_small';
      this.warnings.push({
        code: 'stage_skipped',
        message: `${strategy} would free ${m.freed} tokens, under ${Math.ceil(this.minSaving)}: skipped`,
      });
    }
    this.warnings.push(...out.warnings.filter((w) => w.code !== 'target_not_met'));
    this.failure ??= out.failure;
    if (reason || !out.plan || !m.applied) {
      this.stages.push({
        strategy,
        applied: false,
        tokens_after: this.occupancy,
        ...(reason ? { reason } : {}),
        usage: withTotal(out.usage),
      });
      return false;
    }
    this.occupancy -= m.freed;
    this.bestEffort.push(...(out.bestEffort ?? []));
    this.composed = compose(this.composed, out.plan, m.applied);
    this.view = viewOf(this.view, m.applied, this.occupancy);
    this.stages.push({ strategy, applied: true, tokens_after: this.occupancy, usage: withTotal(out.usage) });
    return true;
  }

  /**
   * The summarize stage spliced in a prepared summary: what making it cost is billed here, once
   * (an entry already billed to an earlier response carries no usage), as `usage.prepared`.
   */
  splice(entry: PreparedContext['entries'][number]): void {
    this.spliced = entry;
    const made = entry.usage;
    if (!made || made.calls === 0) return;
    const sum = addBilled(this.usage, made);
    this.usage = { ...sum, prepared: withTotal(made) };
  }

  /** The last stage taken is only planned (a dry run): recorded as not applied, `dry_run`. */
  markPlanned(): void {
    const stage = this.stages.pop() as Stage;
    this.stages.push({
      strategy: stage.strategy,
      applied: false,
      tokens_after: stage.tokens_after,
      reason: 'dry_run',
      usage: stage.usage,
    });
  }
}

/** Where what a summarize stage wrote ends in its view (a summary, a joined host, section pairs, a QA header). */
export function writtenEnd(applied: Applied, plan: Plan, head: number): number {
  for (let v = applied.sources.length - 1; v >= 0; v--) {
    const entry = plan.entries[applied.entryOf[v] as number];
    if (entry && (!('index' in entry) || entry.edits.length > 0)) return v + 1;
  }
  return head;
}
