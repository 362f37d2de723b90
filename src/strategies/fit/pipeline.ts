import type { ErrorCode } from '../../errors.js';
import { type Applied, applyPlan, type Count } from '../../history/plan/apply.js';
import { type Composed, compose, identity } from '../../history/plan/compose.js';
import { type Evaluation, evaluatePlan } from '../../history/plan/evaluate.js';
import type { Plan } from '../../history/plan/types.js';
import { viewOf } from '../../history/plan/view.js';
import type { Warning } from '../../history/types.js';
import type { NewArtifact } from '../../store/types.js';
import { addUsage } from '../../summarizers/types.js';
import {
  type BilledUsage,
  countWith,
  NO_BILLED,
  type PreparedHistory,
  type StrategyContext,
  type StrategyResult,
  withTotal,
} from '../types.js';
import type { Stage } from './options.js';

/** One stage's result on the current view: its plan (over the view), measured there. */
export interface Measured<E> {
  readonly result: StrategyResult<E>;
  readonly applied: Applied | undefined;
  /** Tokens the stage frees, net of what it writes (summaries estimated at their budget in a dry run). */
  readonly freed: number;
  readonly evaluation: Evaluation | undefined;
}

/** Two stages' usage summed; the model is the last one billed. */
function addBilled(a: BilledUsage, b: BilledUsage | undefined): BilledUsage {
  return b ? { ...addUsage(a, b), model: b.model ?? a.model } : a;
}

/**
 * A pipeline of stages over one history: each stage plans over the view the previous ones leave
 * (`view`), is measured there, and when taken its plan is composed into one plan over the input
 * (`composed.plan`), applied once at the end. Occupancy, the bill and the stage records follow.
 */
export class Pipeline {
  composed: Composed;
  view: PreparedHistory;
  occupancy: number;
  usage: BilledUsage = NO_BILLED;
  readonly stages: Stage[] = [];
  readonly warnings: Warning[] = [];
  readonly bestEffort: NewArtifact[] = [];
  /** The error code of a summarizer failure a stage recovered from (reported with its warning). */
  failure: ErrorCode | undefined;
  readonly count: Count;
  /** A stage that would free less than this is skipped. */
  private readonly minSaving: number;

  constructor(
    readonly h: PreparedHistory,
    ctx: StrategyContext,
    minSavingFraction: number,
  ) {
    this.composed = identity(h.messages.length);
    this.view = h;
    this.occupancy = h.occupancy;
    this.count = countWith(h, ctx);
    this.minSaving = minSavingFraction * h.occupancy;
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
