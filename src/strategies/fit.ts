import { z } from 'zod';
import type { StageSchema } from '../contract/parts.js';
import { fieldError } from '../errors.js';
import { type Applied, applyPlan, type Count } from '../history/plan/apply.js';
import { compose, identity } from '../history/plan/compose.js';
import type { Plan } from '../history/plan/types.js';
import { viewOf } from '../history/plan/view.js';
import type { Warning } from '../history/types.js';
import type { NewArtifact } from '../store/types.js';
import type { SummaryPlan } from '../summarizers/types.js';
import { addUsage } from '../summarizers/types.js';
import type { ModelProfile } from '../tokens/models.js';
import { type ArtifactRef, CompactOptions, compactStrategy } from './compact.js';
import { type Dropped, WindowOptions, windowAbove } from './sliding-window.js';
import { type SummarizeExtra, SummarizeOptions, type SummaryReport, summarizeStrategy } from './summarize/index.js';
import { allowedModel } from './summarize/range.js';
import {
  type BilledUsage,
  countWith,
  NO_BILLED,
  type PreparedHistory,
  type Strategy,
  type StrategyContext,
  type StrategyResult,
  withTotal,
} from './types.js';

export const FitOptions = z.strictObject({
  target_tokens: z.number().int().min(0).optional().describe('the occupancy to get under (this or target_fraction is required)'),
  target_fraction: z.number().gt(0).max(1).optional().describe("the target as a fraction of the model's context window"),
  min_saving_fraction: z
    .number()
    .min(0)
    .max(0.5)
    .default(0.02)
    .describe('a stage that would free less than this fraction of occupancy is skipped (no cache rewrite that does not pay)'),
  compact: z
    .strictObject(CompactOptions.partial().shape)
    .optional()
    .describe('options of the compaction stage (its target is the fit target)'),
  summarize: z.strictObject(SummarizeOptions.partial().shape).optional().describe('options of the summarization stage'),
  window: z
    .strictObject(WindowOptions.partial().shape)
    .optional()
    .describe('options of the sliding-window stage (default: a token budget that meets the target)'),
});

export type FitOptions = z.output<typeof FitOptions>;

export type Stage = z.output<typeof StageSchema>;

export interface FitExtra {
  stages: Stage[];
  target: number;
  artifacts: ArtifactRef[];
  summary: SummaryReport | null;
  dropped: Dropped | null;
  /** The occupancy at which calling again is worth it. */
  call_again_at: number;
  /** Dry run: the calls the summarize stage would make. */
  plan?: SummaryPlan;
}

/** Two stages' usage summed; the model is the last one billed. */
function addBilled(a: BilledUsage, b: BilledUsage | undefined): BilledUsage {
  return b ? { ...addUsage(a, b), model: b.model ?? a.model } : a;
}

/** The target in tokens; throws when none is given or a fraction has no known window to apply to. */
function targetOf(o: FitOptions, profile: ModelProfile): number {
  const window = profile.contextWindow;
  if (o.target_tokens === undefined && o.target_fraction === undefined) {
    throw fieldError('CMP_ERR_REQUEST_VALIDATION', 'target_tokens', 'give target_tokens or target_fraction');
  }
  if (o.target_tokens === undefined && window === undefined) {
    throw fieldError(
      'CMP_ERR_OPTIONS_INVALID',
      'target_fraction',
      'the context window of this model is unknown; set context_window or target_tokens',
    );
  }
  return o.target_tokens ?? Math.floor((o.target_fraction ?? 1) * (window ?? 0));
}

/** One stage's result on the current view: its plan (over the view), measured there. */
interface Measured<E> {
  result: StrategyResult<E>;
  applied: Applied | undefined;
  /** Tokens the stage frees, net of what it writes (summaries estimated at their budget in a dry run). */
  freed: number;
}

function measure<E>(view: PreparedHistory, result: StrategyResult<E>, count: Count): Measured<E> {
  if (!result.plan || result.reason) return { result, applied: undefined, freed: 0 };
  const applied = applyPlan(view, result.plan, count);
  return { result, applied, freed: applied.freed - applied.added - (result.estimated ?? 0) };
}

/** Where what a summarize stage wrote ends in its view (a summary, a joined host, section pairs, a QA header). */
function writtenEnd(applied: Applied, plan: Plan, head: number): number {
  for (let v = applied.sources.length - 1; v >= 0; v--) {
    const entry = plan.entries[applied.entryOf[v] as number];
    if (entry && (!('index' in entry) || entry.edits.length > 0)) return v + 1;
  }
  return head;
}

/**
 * Fit (Manning 6.2.6, the hierarchical optimizer): measure; above the target, compact; still above,
 * summarize; window only if the summarizer failed or the history is still above. Each stage plans
 * over the view the previous one leaves; the plans are composed on the input's indices and applied
 * once (`Compactor.run`). A stage that would free too little is skipped and said so. Always a
 * valid history: when the target cannot be met without breaking a structural rule,
 * `target_not_met` names the irreducible size.
 */
async function run(h: PreparedHistory, o: FitOptions, ctx: StrategyContext): Promise<StrategyResult<FitExtra>> {
  const target = targetOf(o, ctx.profile);
  const warnings: Warning[] = [];
  const stages: Stage[] = [];
  const extra: Omit<FitExtra, 'artifacts' | 'summary' | 'dropped'> = { stages, target, call_again_at: target };
  const none = (reason: string, usage?: BilledUsage): StrategyResult<FitExtra> => ({
    warnings,
    reason,
    ...(usage ? { usage } : {}),
    extra: () => ({ stages, target, artifacts: [], summary: null, dropped: null, call_again_at: extra.call_again_at }),
  });
  if (h.occupancy <= target) return none('below_trigger');

  const count = countWith(h, ctx);
  let composed = identity(h.messages.length);
  let view = h;
  let occupancy = h.occupancy;
  let usage = NO_BILLED;
  let estimated = 0;
  const bestEffort: NewArtifact[] = [];
  const minSaving = o.min_saving_fraction * occupancy;

  /** Takes a stage if it frees enough (composing its plan), records it either way; returns whether it was taken. */
  const take = <E>(strategy: Stage['strategy'], m: Measured<E>): boolean => {
    const out = m.result;
    usage = addBilled(usage, out.usage);
    let reason = out.reason;
    if (!reason && m.freed < minSaving) {
      reason = 'saving_too_small';
      warnings.push({
        code: 'stage_skipped',
        message: `${strategy} would free ${m.freed} tokens, under ${Math.ceil(minSaving)}: skipped`,
      });
    }
    warnings.push(...out.warnings.filter((w) => w.code !== 'target_not_met'));
    if (reason || !out.plan || !m.applied) {
      stages.push({
        strategy,
        applied: false,
        tokens_after: occupancy,
        ...(reason ? { reason } : {}),
        usage: withTotal(out.usage),
      });
      return false;
    }
    occupancy -= m.freed;
    bestEffort.push(...(out.bestEffort ?? []));
    composed = compose(composed, out.plan, m.applied);
    view = viewOf(view, m.applied, occupancy);
    stages.push({ strategy, applied: true, tokens_after: occupancy, usage: withTotal(out.usage) });
    return true;
  };

  // 1. Compact, aiming at the target.
  const compactOptions = CompactOptions.parse({ ...o.compact, target_tokens: target });
  take('compact', measure(view, await compactStrategy.run(view, compactOptions, ctx), count));

  // 2. Summarize only if still above. A failure leaves the history as it was and the window
  // stands in (`fallback`), unless the request asked for the error (`summarize.on_failure: error`).
  let failure: string | undefined;
  let summary: StrategyResult<SummarizeExtra> | undefined;
  let summaryPlanned = false;
  /** Where what the summarize stage wrote ends: the window keeps everything before it. */
  let summaryEnd: number = view.head;
  if (occupancy > target) {
    const onFailure = o.summarize?.on_failure === 'error' ? 'error' : 'keep';
    const options = SummarizeOptions.parse({ ...o.summarize, on_failure: onFailure });
    const m = measure(view, await summarizeStrategy.run(view, options, ctx), count);
    failure = m.result.failure;
    const before = view;
    if (take('summarize', m)) {
      summary = m.result;
      if (m.applied && m.result.plan) summaryEnd = writtenEnd(m.applied, m.result.plan, before.head);
      // A dry run knows what the summary would replace, not the summary itself (an estimate).
      if (ctx.dryRun) {
        summaryPlanned = true;
        estimated = m.result.estimated ?? 0;
        const stage = stages.pop() as Stage;
        stages.push({
          strategy: stage.strategy,
          applied: false,
          tokens_after: stage.tokens_after,
          reason: 'dry_run',
          usage: stage.usage,
        });
      }
    }
  }

  // 3. Window, the last resort: when the summarizer failed or the history is still above. It never
  // drops the summary (nor what precedes it): that is the history's oldest part, already compressed.
  // A dry run does not know what the summary would leave, so it does not guess at a window after it.
  let fallback: StrategyResult<FitExtra>['fallback'];
  let windowed: StrategyResult<{ dropped: Dropped }> | undefined;
  if ((occupancy > target || failure) && !summaryPlanned) {
    const fixed = occupancy - view.counts.reduce((a, b) => a + b, 0);
    const keep = o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
    const w = windowAbove(view, WindowOptions.parse({ ...o.window, keep }), summaryEnd);
    if (take('window', measure(view, w, count))) {
      windowed = w;
      if (failure) fallback = { from: 'summarize', to: 'window', reason: failure };
    }
  }

  if (occupancy > target && !summaryPlanned) {
    warnings.push({
      code: 'target_not_met',
      message: `occupancy is ${occupancy}, over the target ${target}: the rest is the head, the first user message, ${summary?.extra(undefined).summary ? 'the summary ' : ''}and the newest group, which no strategy may remove`,
    });
  }
  extra.call_again_at = Math.max(target, Math.ceil(occupancy * 1.1));
  if (stages.every((s) => !s.applied) && !summaryPlanned) return none('nothing_to_reduce', usage);
  const dropped = windowed?.extra(undefined).dropped ?? null;
  return {
    plan: composed.plan,
    warnings,
    estimated,
    bestEffort,
    usage,
    ...(fallback ? { fallback } : {}),
    extra: (applied) => {
      const s = summary?.extra(applied);
      return {
        stages,
        target,
        artifacts: applied?.artifacts ?? [],
        summary: s?.summary ?? null,
        dropped,
        call_again_at: extra.call_again_at,
        ...(s?.plan ? { plan: s.plan } : {}),
      };
    },
  };
}

export const fitStrategy: Strategy<typeof FitOptions, FitExtra> = {
  kind: 'fit',
  options: FitOptions,
  idle: (h) => ({ stages: [], target: 0, artifacts: [], summary: null, dropped: null, call_again_at: h.occupancy }),
  check: (o, env) => {
    targetOf(o, env.profile);
    // The summarize stage's model is a 400 even when the stage would not run.
    allowedModel(env.summarizer, o.summarize?.summarizer?.model, 'summarize.summarizer.model');
  },
  run,
};
