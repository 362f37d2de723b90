import { z } from 'zod';
import { fieldError } from '../errors.js';
import type { Action, Warning } from '../history/types.js';
import type { NewArtifact } from '../store/types.js';
import type { SummaryPlan } from '../summarizers/types.js';
import { addUsage } from '../summarizers/types.js';
import type { ModelProfile } from '../tokens/models.js';
import { type ArtifactRef, CompactOptions, compactStrategy } from './compact.js';
import { type Dropped, WindowOptions, windowAbove } from './sliding-window.js';
import { SummarizeOptions, type SummaryReport, summarizeStrategy } from './summarize.js';
import { allowedModel } from './summary-range.js';
import {
  type BilledUsage,
  NO_BILLED,
  type PreparedHistory,
  type Strategy,
  type StrategyContext,
  type StrategyOutput,
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

export interface Stage {
  strategy: 'compact' | 'summarize' | 'window';
  applied: boolean;
  tokens_after: number;
  reason?: string;
  usage: BilledUsage & { total_tokens: number };
}

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

/**
 * Fit (Manning 6.2.6, the hierarchical optimizer): measure; above the target, compact; still above,
 * summarize; window only if the summarizer failed or the history is still above. A stage that
 * would free too little is skipped and said so. Always a valid history: when the target cannot be
 * met without breaking a structural rule, `target_not_met` names the irreducible size.
 */
async function run(h: PreparedHistory, o: FitOptions, ctx: StrategyContext): Promise<StrategyOutput<FitExtra>> {
  const target = targetOf(o, ctx.profile);
  const warnings: Warning[] = [];
  const stages: Stage[] = [];
  const extra: FitExtra = { stages, target, artifacts: [], summary: null, dropped: null, call_again_at: target };
  if (h.occupancy <= target) {
    return { messages: [...h.messages], actions: [], warnings, reason: 'below_trigger', addedTokens: 0, extra };
  }

  // Where each current message came from in the input (object identity; rewrites keep their slot).
  const origin = new Map<unknown, number>(h.messages.map((m, i) => [m, i]));
  let current = h;
  let occupancy = h.occupancy;
  let usage = NO_BILLED;
  const offload: NewArtifact[] = [];
  const bestEffort: NewArtifact[] = [];
  /** Input messages a stage removed, and how. */
  const fate = new Map<number, 'summarize' | 'drop'>();
  const prepare = ctx.prepare;
  const minSaving = o.min_saving_fraction * occupancy;

  /** Takes a stage's output if it frees enough; records the stage either way. */
  const take = <E>(strategy: Stage['strategy'], out: StrategyOutput<E>): boolean => {
    usage = addBilled(usage, out.usage);
    const freed = out.actions.reduce((n, a) => n + a.tokens_freed, 0) - out.addedTokens;
    let reason = out.reason;
    if (!reason && freed < minSaving) {
      reason = 'saving_too_small';
      warnings.push({
        code: 'stage_skipped',
        message: `${strategy} would free ${freed} tokens, under ${Math.ceil(minSaving)}: skipped`,
      });
    }
    warnings.push(...out.warnings.filter((w) => w.code !== 'target_not_met'));
    if (reason) {
      stages.push({ strategy, applied: false, tokens_after: occupancy, reason, usage: withTotal(out.usage) });
      return false;
    }
    // Follow each message through the stage: rewritten in place, or removed (summarized, dropped).
    const kept = new Set(out.messages);
    out.actions.forEach((a) => {
      const before = current.messages[a.index];
      const from = origin.get(before);
      if (from === undefined || from < 0) return;
      if (a.action === 'summarize' || a.action === 'drop') {
        if (!kept.has(before)) fate.set(from, a.action);
      } else if (a.action !== 'keep' && strategy !== 'window') {
        origin.set(out.messages[a.index], from);
      }
    });
    occupancy -= freed;
    offload.push(...(out.offload ?? []));
    bestEffort.push(...(out.bestEffort ?? []));
    stages.push({ strategy, applied: true, tokens_after: occupancy, usage: withTotal(out.usage) });
    return true;
  };
  const next = (messages: unknown[]) => (prepare ? prepare(messages, occupancy) : current);

  // 1. Compact, aiming at the target.
  const compacted = await compactStrategy.run(current, CompactOptions.parse({ ...o.compact, target_tokens: target }), ctx);
  if (take('compact', compacted)) {
    extra.artifacts = compacted.extra.artifacts;
    current = next(compacted.messages);
  }

  // 2. Summarize only if still above. A failure leaves the history as it was and the window
  // stands in (`fallback`), unless the request asked for the error (`summarize.on_failure: error`).
  let failure: string | undefined;
  /** Dry run: what the summarize stage would do to each input message, and the summary's estimated size. */
  let planned = new Map<number, Omit<Action, 'index'>>();
  let plannedAdded = 0;
  /** Where what the summarize stage wrote ends: the window keeps everything before it. */
  let summaryEnd: number = current.head;
  if (occupancy > target) {
    const onFailure = o.summarize?.on_failure === 'error' ? 'error' : 'keep';
    const options = SummarizeOptions.parse({ ...o.summarize, on_failure: onFailure });
    const summarized = await summarizeStrategy.run(current, options, ctx);
    failure = summarized.failure;
    const before = new Set(current.messages);
    if (ctx.dryRun && summarized.reason === undefined) {
      // A dry run knows what the summary would replace, not the summary itself (an estimate).
      extra.plan = summarized.extra.plan ?? { calls: [], model: null };
      const estimate = summarized.actions.reduce((n, a) => n + a.tokens_freed, 0) - summarized.addedTokens;
      occupancy -= estimate;
      planned = plannedActions(h, current, origin, summarized.actions);
      plannedAdded = summarized.addedTokens;
      warnings.push(...summarized.warnings);
      stages.push({
        strategy: 'summarize',
        applied: false,
        tokens_after: occupancy,
        reason: 'dry_run',
        usage: withTotal(summarized.usage),
      });
    } else if (take('summarize', summarized)) {
      extra.summary = summarized.extra.summary;
      // The range's indexes are the compacted history's (compaction may drop reasoning items):
      // each is reported as the input message it came from.
      const inputIndex = (i: number) => origin.get(current.messages[i]) ?? i;
      const ranges = (summarized.extra.artifacts ?? []).map((r) => ({ ...r, message_index: inputIndex(r.message_index) }));
      extra.artifacts = [...extra.artifacts, ...ranges];
      current = next(summarized.messages);
      // Past the last message the stage wrote (a rolling summary, a joined host, section summary
      // pairs, a QA header): the window may cut only after it.
      for (let i = summarized.messages.length - 1; i >= 0; i--) {
        if (!before.has(summarized.messages[i])) {
          summaryEnd = i + 1;
          break;
        }
      }
    }
  }

  // 3. Window, the last resort: when the summarizer failed or the history is still above. It never
  // drops the summary (nor what precedes it): that is the history's oldest part, already compressed.
  let fallback: StrategyOutput<FitExtra>['fallback'];
  // A dry run does not know what the summary would leave, so it does not guess at a window after it.
  const summaryPlanned = extra.plan !== undefined;
  if ((occupancy > target || failure) && !summaryPlanned) {
    const fixed = occupancy - current.counts.reduce((a, b) => a + b, 0);
    const keep = o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
    const windowed = windowAbove(current, WindowOptions.parse({ ...o.window, keep }), summaryEnd);
    if (take('window', windowed)) {
      extra.dropped = windowed.extra.dropped;
      current = next(windowed.messages);
      if (failure) fallback = { from: 'summarize', to: 'window', reason: failure };
    }
  }

  if (occupancy > target && !summaryPlanned) {
    warnings.push({
      code: 'target_not_met',
      message: `occupancy is ${occupancy}, over the target ${target}: the rest is the head, the first user message, ${extra.summary ? 'the summary ' : ''}and the newest group, which no strategy may remove`,
    });
  }
  extra.call_again_at = Math.max(target, Math.ceil(occupancy * 1.1));
  if (stages.every((s) => !s.applied) && !summaryPlanned) {
    return { messages: [...h.messages], actions: [], warnings, reason: 'nothing_to_reduce', addedTokens: 0, usage, extra };
  }

  // The record, per input message: its strongest action, and what it freed.
  const messages = [...current.messages];
  const present = new Map<number, unknown>();
  let added = plannedAdded;
  for (const m of messages) {
    const i = origin.get(m);
    if (i === undefined || i < 0) added += ctx.counter.countMessage(h.format, ctx.profile, m);
    else present.set(i, m);
  }
  const actions: Action[] = h.messages.map((original, index) => {
    const plan = planned.get(index);
    if (plan) return { index, ...plan };
    const now = present.get(index);
    if (now === original) return { index, action: 'keep', tokens_freed: 0 };
    if (now === undefined) return { index, action: fate.get(index) ?? 'drop', tokens_freed: h.counts[index] as number };
    // A message still present but changed was compacted (a summarized range is never present).
    const art = extra.artifacts.find((r) => r.message_index === index && !r.kind.endsWith('_range'));
    return {
      index,
      action: art ? 'offload' : 'rewrite',
      tokens_freed: (h.counts[index] as number) - ctx.counter.countMessage(h.format, ctx.profile, now),
      ...(art ? { artifact_id: art.id } : {}),
    };
  });
  return {
    messages,
    actions,
    warnings,
    addedTokens: added,
    offload,
    bestEffort,
    usage,
    extra,
    ...(fallback ? { fallback } : {}),
  };
}

/**
 * A dry run's summarize stage, per input message: what it would do (summarize, or rewrite a host
 * the summary joins) and what that frees against the input (compaction before it included).
 */
function plannedActions(
  h: PreparedHistory,
  current: PreparedHistory,
  origin: ReadonlyMap<unknown, number>,
  stage: readonly Action[],
): Map<number, Omit<Action, 'index'>> {
  const out = new Map<number, Omit<Action, 'index'>>();
  for (const a of stage) {
    const from = origin.get(current.messages[a.index]);
    if (a.action === 'keep' || from === undefined || from < 0) continue;
    const gone = a.action === 'summarize' || a.action === 'drop';
    const left = (current.counts[a.index] as number) - a.tokens_freed;
    out.set(from, { action: a.action, tokens_freed: (h.counts[from] as number) - (gone ? 0 : left) });
  }
  return out;
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
