import { CompactOptions, compactStrategy } from '../compact.js';
import { type Dropped, WindowOptions, windowAbove } from '../sliding-window.js';
import { type SummarizeExtra, SummarizeOptions, summarizeStrategy } from '../summarize/index.js';
import { allowedModel } from '../summarize/range.js';
import type { PreparedHistory, Strategy, StrategyContext, StrategyResult } from '../types.js';
import { FIT_RESPONSE, type FitExtra, FitOptions, targetOf } from './options.js';
import { Pipeline, writtenEnd } from './pipeline.js';

export { type FitExtra, FitOptions, type Stage } from './options.js';

/** What the summarize stage left: its result, where what it wrote ends, and whether it was only planned (a dry run). */
interface Summarized {
  result: StrategyResult<SummarizeExtra> | undefined;
  failure: string | undefined;
  /** The window keeps everything before this position of its view. */
  end: number;
  planned: boolean;
}

/**
 * The summarize stage, only while above the target. A failure leaves the history as it was and
 * the window stands in (`fallback`), unless the request asked for the error (`on_failure: error`).
 * A dry run knows what the summary would replace, not the summary itself: it is planned (an
 * estimate), and nothing after it is guessed.
 */
async function summarizeStage(p: Pipeline, o: FitOptions, target: number, ctx: StrategyContext): Promise<Summarized> {
  const out: Summarized = { result: undefined, failure: undefined, end: p.view.head, planned: false };
  if (p.occupancy <= target) return out;
  const onFailure = o.summarize?.on_failure === 'error' ? 'error' : 'keep';
  const options = SummarizeOptions.parse({ ...o.summarize, on_failure: onFailure });
  const before = p.view;
  const m = p.measure(await summarizeStrategy.run(before, options, ctx));
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
function windowStage(p: Pipeline, o: FitOptions, target: number, floor: number): Dropped | null {
  const fixed = p.occupancy - p.view.counts.reduce((a, b) => a + b, 0);
  const keep = o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
  const windowed = windowAbove(p.view, WindowOptions.parse({ ...o.window, keep }), floor);
  return p.take('window', p.measure(windowed)) ? windowed.extra(undefined).dropped : null;
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
  const p = new Pipeline(h, ctx, o.min_saving_fraction);
  let callAgainAt = target;
  const extra = (
    s: {
      artifacts?: FitExtra['artifacts'];
      summary?: FitExtra['summary'];
      dropped?: Dropped | null;
      plan?: FitExtra['plan'];
    } = {},
  ): FitExtra => ({
    stages: p.stages,
    target,
    artifacts: s.artifacts ?? [],
    summary: s.summary ?? null,
    dropped: s.dropped ?? null,
    call_again_at: callAgainAt,
    ...(s.plan ? { plan: s.plan } : {}),
  });
  if (h.occupancy <= target) return { warnings: p.warnings, reason: 'below_trigger', extra: () => extra() };

  p.take(
    'compact',
    p.measure(await compactStrategy.run(p.view, CompactOptions.parse({ ...o.compact, target_tokens: target }), ctx)),
  );
  const summarized = await summarizeStage(p, o, target, ctx);
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
  callAgainAt = Math.max(target, Math.ceil(p.occupancy * 1.1));
  if (p.stages.every((s) => !s.applied) && !summarized.planned) {
    return { warnings: p.warnings, reason: 'nothing_to_reduce', usage: p.usage, extra: () => extra() };
  }
  return {
    plan: p.composed.plan,
    warnings: p.warnings,
    bestEffort: p.bestEffort,
    usage: p.usage,
    ...(fallback ? { fallback } : {}),
    extra: (applied) => {
      const s = summarized.result?.extra(applied);
      return extra({
        artifacts: applied?.artifacts ?? [],
        summary: s?.summary ?? null,
        dropped,
        ...(s?.plan ? { plan: s.plan } : {}),
      });
    },
  };
}

export const fitStrategy: Strategy<typeof FitOptions, FitExtra, typeof FIT_RESPONSE> = {
  kind: 'fit',
  options: FitOptions,
  response: FIT_RESPONSE,
  docs: {
    summary: 'Fit: compact, then summarize if still over target, window as the last resort',
    description:
      'Gets occupancy under `target_tokens` (or `target_fraction` of the context window; below it, nothing is done: the target is the trigger). Stages, each with its own options object: `compact` (aimed at the target), `summarize` only if still above (a failure leaves the history as it was; with `summarize.on_failure: error` it is answered as the error), `window` only if the summarizer failed (reported as `fallback`) or the history is still above (by default a token budget that meets the target; it never drops the summary just written, only what follows it). A stage that would free less than `min_saving_fraction` of occupancy is skipped and said so. `stages` reports each; billed `usage` is their sum; `call_again_at` suggests when another call pays. Always a valid history: when the target cannot be met, `warnings` says `target_not_met` with the irreducible size.',
  },
  answers: ['summarizer', 'store'],
  idle: (h) => ({ stages: [], target: 0, artifacts: [], summary: null, dropped: null, call_again_at: h.occupancy }),
  check: (o, env) => {
    targetOf(o, env.profile);
    // The summarize stage's model is a 400 even when the stage would not run.
    allowedModel(env.summarizer, o.summarize?.summarizer?.model, 'summarize.summarizer.model');
  },
  run,
};
