import { type Applied, applyPlan, type Count } from '../../history/plan/apply.js';
import { type Evaluation, evaluatePlan } from '../../history/plan/evaluate.js';
import type { NewArtifact } from '../../store/types.js';
import { usageScale } from '../../tokens/occupancy.js';
import { modelFor } from '../priced.js';
import type { PreparedRange } from '../summarize/prepared.js';
import {
  countWith,
  type PreparedEntry,
  type PreparedHistory,
  prepares,
  type StrategyContext,
  type StrategyResult,
} from '../types.js';
import type { Measurements } from './decide.js';
import { type FitOptions, limitOf, targetOf } from './options.js';

/** One fit request, resolved once (target, limit, cost model: see `Measurements`); nothing changes it. */
export interface FitRequest extends Omit<Measurements, 'candidates' | 'pending' | 'ready' | 'resent'> {
  readonly h: PreparedHistory;
  readonly o: FitOptions;
  readonly ctx: StrategyContext;
  readonly count: Count;
  /** A stage that would free less than this is skipped (policy tokens). */
  readonly minSaving: number;
  /**
   * Occupancy tokens per counted token: 1 unless the request's `usage` counts its messages
   * otherwise than Compactor's tokenizer does (another provider's tokenizer): what a stage frees,
   * counted here, is taken off the occupancy at that rate, so that `tokens.after` stays in the
   * usage's units and never goes under what remains (it went negative: 34,714 -> -17,415).
   */
  readonly scale: number;
  /** Whether this run prepares and splices: the service offers it, the request or its default wants it, and it is real. */
  readonly preparing: boolean;
}

/** The range the next call's summary would cover, in the history as it will see it (`early`: what its compaction offloads). */
export interface NextRange {
  readonly view: PreparedHistory;
  readonly early: NewArtifact[];
  readonly range: PreparedRange;
  readonly known: PreparedEntry | undefined;
}

/** The run context every stage reads and none changes: the request, and what was measured to decide (`measure`). */
export interface FitContext extends FitRequest, Measurements {
  readonly compaction?: Measured<unknown>;
  readonly summaryDueAt?: number;
  readonly next?: NextRange;
}

/** One stage's result on a view: its plan (over the view), measured there. */
export interface Measured<E> {
  readonly result: StrategyResult<E>;
  readonly applied: Applied | undefined;
  /** Tokens the stage frees, net of what it writes (summaries estimated at their budget in a dry run). */
  readonly freed: number;
  readonly evaluation: Evaluation | undefined;
}

export function resolve(h: PreparedHistory, o: FitOptions, ctx: StrategyContext): FitRequest {
  const target = targetOf(o, ctx.profile);
  const limit = limitOf(o, ctx.profile, target);
  const model = modelFor(h, o, ctx, ctx.summarizer?.model?.(o.summarize?.summarizer?.model) ?? null);
  const preparing = ctx.prepared !== undefined && prepares(o.prepare?.enabled, ctx.dryRun, ctx.prepared.byDefault);
  const minSaving = o.policy === 'tokens' ? o.min_saving_fraction * h.occupancy : 0;
  const forced = h.occupancy > limit;
  const scale = scaleOf(h, model.fixed);
  return {
    h,
    o,
    ctx,
    policy: o.policy,
    occupancy: h.occupancy,
    target,
    limit,
    forced,
    model,
    count: countWith(h, ctx),
    minSaving,
    preparing,
    scale,
  };
}

/** Occupancy tokens per counted token (`FitRequest.scale`): exactly 1 when the occupancy is the count. */
function scaleOf(h: Pick<PreparedHistory, 'occupancy' | 'counts'>, fixed: number): number {
  let counted = fixed;
  for (const c of h.counts) counted += c;
  return usageScale(h.occupancy, counted);
}

/** A stage's result measured on `view`. */
export function measured<E>(
  r: Pick<FitRequest, 'count' | 'scale'>,
  view: PreparedHistory,
  result: StrategyResult<E>,
): Measured<E> {
  if (!result.plan || result.reason) return { result, applied: undefined, freed: 0, evaluation: undefined };
  const applied = applyPlan(view, result.plan, r.count);
  const evaluation = evaluatePlan(result.plan, applied);
  const freed = r.scale === 1 ? evaluation.saved : Math.round(evaluation.saved * r.scale);
  return { result, applied, freed, evaluation };
}
