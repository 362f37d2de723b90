import { type CompactOptions, compactStrategy } from '../compact.js';
import { WindowOptions, windowAbove } from '../sliding-window.js';
import { summarizeStrategy } from '../summarize/index.js';
import { fitCompactOptions, summarizeOptions } from './options.js';
import { spliceable } from './prepare.js';
import { type FitRun, type Measured, writtenEnd } from './run.js';

/** One of fit's stages: a step of the run, each only while the run is above its target. */
export type FitStage = (run: FitRun) => Promise<void> | void;

/** The compaction stage's options (`fitCompactOptions`). */
export function compactOptions(run: FitRun): CompactOptions {
  return fitCompactOptions(run.o, run.target);
}

/** The compaction stage's result, planned once per run (the cost policy prices it before taking it). */
export async function compaction(run: FitRun): Promise<Measured<unknown>> {
  run.compacted ??= run.measure(await compactStrategy.run(run.view, compactOptions(run), run.ctx));
  return run.compacted;
}

/** Compaction: the first stage, always run. */
export const compactStage: FitStage = async (run) => {
  run.take('compact', await compaction(run));
};

/**
 * The summarize stage, only while above the target. A failure leaves the history as it was and
 * the window stands in (`fallback`), unless the request asked for the error (`on_failure: error`).
 * A dry run knows what the summary would replace, not the summary itself: it is planned (an
 * estimate), and nothing after it is guessed.
 */
export const summarizeStage: FitStage = async (run) => {
  run.summarized = { result: undefined, failure: undefined, end: run.view.head, planned: false };
  if (run.occupancy <= run.target) return;
  await summarizeOnce(run, true);
};

/**
 * After a splice, before the window: a prepared summary covers the range it was prepared for,
 * which the history may have long outgrown. When the history is still above the target, the
 * summary the call would have made without preparing is made now, on the request path, folding
 * the spliced one: the window drops only what a summary could not have saved (a prepared summary
 * never costs the agent messages). Its failure leaves the splice, and the window stands in.
 */
export const refoldStage: FitStage = async (run) => {
  if (!run.spliced || !run.summarized.result || run.summarized.planned || run.occupancy <= run.target) return;
  await summarizeOnce(run, false);
};

/** One summary over the current view (a prepared one spliced in when `splice` and it matches), taken when it frees enough. */
async function summarizeOnce(run: FitRun, splice: boolean): Promise<void> {
  const before = run.view;
  // What the compaction stage offloaded is not stored yet: the summary's trail reads it from here.
  const offloaded = run.composed.plan.artifacts;
  const pending = offloaded.length > 0 ? new Map(offloaded.map((a) => [a.id, a.value])) : run.ctx.pending;
  // A summary prepared in the background for this range is in the summary cache: asking for it is a hit.
  const o = summarizeOptions(run.o);
  const prepared = splice ? await spliceable(run, before, o, true) : undefined;
  const m = run.measure(await summarizeStrategy.run(before, prepared?.options ?? o, { ...run.ctx, pending }));
  run.summarized.failure = m.result.failure;
  if (!run.take('summarize', m)) return;
  if (prepared) run.splice(prepared.entry);
  run.summarized.result = m.result;
  if (m.applied && m.result.plan) run.summarized.end = writtenEnd(m.applied, m.result.plan, before.head);
  if (run.ctx.dryRun) {
    run.summarized.planned = true;
    run.markPlanned();
  }
}

/**
 * The window, the last resort: where the summarizer failed or the history is still above the
 * target, never after a planned (dry-run) summary (what follows it depends on its real size). It
 * never drops the summary (nor what precedes it): that is the history's oldest part, already
 * compressed. By default a token budget that meets the target. Then the warning when the target
 * cannot be met.
 */
export const windowStage: FitStage = (run) => {
  const { summarized, target } = run;
  if ((run.occupancy > target || summarized.failure) && !summarized.planned) {
    const fixed = run.occupancy - run.view.counts.reduce((a, b) => a + b, 0);
    const keep = run.o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
    const windowed = windowAbove(run.view, WindowOptions.parse({ ...run.o.window, keep }), summarized.end);
    run.dropped = run.take('window', run.measure(windowed)) ? windowed.extra(undefined).dropped : null;
    if (run.dropped && summarized.failure) run.fallback = { from: 'summarize', to: 'window', reason: summarized.failure };
  }
  if (run.occupancy > target && !summarized.planned) {
    const summary = summarized.result?.extra(undefined).summary ? 'the summary ' : '';
    run.warnings.push({
      code: 'target_not_met',
      message: `occupancy is ${run.occupancy}, over the target ${target}: the rest is the head, the first user message, ${summary}and the newest group, which no strategy may remove`,
    });
  }
};

/** Runs stages in order, each on what the previous ones left. */
export async function runStages(run: FitRun, stages: readonly FitStage[]): Promise<void> {
  for (const stage of stages) await stage(run);
}
