import { compactStrategy } from '../compact.js';
import { WindowOptions, windowAbove } from '../sliding-window.js';
import { summarizeStrategy } from '../summarize/index.js';
import { type FitContext, measured } from './context.js';
import type { Spliceable } from './decide.js';
import { fitCompactOptions, summarizeOptions } from './options.js';
import { markPlanned, type Pipeline, splice, take, took, unsummarized, writtenEnd } from './pipeline.js';
import { spliceable } from './prepare.js';
import { neverWaits, summarizeNoWait } from './standin.js';
import { markWindow } from './window-marker.js';

/** One of fit's stages: what the stages before left in, what this one leaves out (OpenHands' pipeline condenser). */
export type FitStage = (c: FitContext, acc: Pipeline) => Promise<Pipeline> | Pipeline;

/** Compaction: the first stage, always run; planned once per run (the cost policy priced it before deciding). */
export const compactStage: FitStage = async (c, acc) => {
  const compaction =
    c.compaction ?? measured(c, acc.view, await compactStrategy.run(acc.view, fitCompactOptions(c.o, c.target), c.ctx));
  return take(c, acc, 'compact', compaction);
};

/**
 * The summarize stage, only while above the target, splicing in what `find` gives. A failure
 * leaves the history as it was (the window stands in: `fallback`) unless `on_failure: error`. A dry
 * run plans the summary (an estimate), and nothing after it is guessed.
 */
export function summarizeWith(
  find: (c: FitContext, acc: Pipeline) => Promise<Spliceable | undefined> | Spliceable | undefined,
): FitStage {
  return async (c, acc) => {
    const reset = { ...acc, summarized: unsummarized(acc.view.head) };
    if (acc.occupancy <= c.target) return reset;
    return summarizeOnce(c, reset, await find(c, acc));
  };
}

/** The summarize stage of the ladder: a prepared summary ready for this view is spliced in, one being made waited for (`wait_ms`). */
export const summarizeStage = summarizeWith((c, acc) => spliceable(c, acc.view, summarizeOptions(c.o), !neverWaits(c)));

/**
 * After a splice, still above the target (the history outgrew the prepared range): the summary the
 * call would have made without preparing, folding the spliced one, so that a prepared summary never
 * costs the agent messages. Its failure leaves the splice, and the window stands in.
 */
export const refoldStage: FitStage = (c, acc) => {
  const { summarized } = acc;
  if (!acc.spliced || !summarized.result || summarized.planned || acc.occupancy <= c.target) return acc;
  return summarizeOnce(c, acc, undefined);
};

/** One summary over the current view (`prepared` spliced in when given), taken when it frees enough. */
async function summarizeOnce(c: FitContext, acc: Pipeline, prepared: Spliceable | undefined): Promise<Pipeline> {
  const before = acc.view;
  // What the compaction stage offloaded is not stored yet: the summary's trail reads it from here.
  const offloaded = acc.composed.plan.artifacts;
  const pending = offloaded.length > 0 ? new Map(offloaded.map((a) => [a.id, a.value])) : c.ctx.pending;
  // A summary prepared in the background for this range is in the summary cache: asking for it is a hit.
  const options = prepared?.options ?? summarizeOptions(c.o);
  const ctx = { ...c.ctx, pending };
  // Never waiting on a model (`summarizer_wait: never`): a cached LLM summary, else the extractive one stands in.
  const llm = !prepared && neverWaits(c) ? c.ctx.summarizer : undefined;
  const out = llm ? await summarizeNoWait(before, options, ctx, llm) : await summarizeStrategy.run(before, options, ctx);
  const m = measured(c, before, out);
  const tried = { ...acc, summarized: { ...acc.summarized, failure: m.result.failure } };
  const next = take(c, tried, 'summarize', m);
  if (!took(next)) return next;
  const end = m.applied && m.result.plan ? writtenEnd(m.applied, m.result.plan, before.head) : acc.summarized.end;
  const planned = c.ctx.dryRun === true;
  const done = {
    ...(prepared ? splice(next, prepared.entry) : next),
    summarized: { result: m.result, failure: m.result.failure, end, planned },
  };
  return planned ? markPlanned(done) : done;
}

/**
 * The window, the last resort: where the summarizer failed or the history is still above the
 * target, never after a planned summary (what follows depends on its real size), never dropping
 * the summary; by default a budget that meets the target. Then the warning when it cannot be met.
 */
export const windowStage: FitStage = (c, acc) => {
  const { summarized } = acc;
  const { target } = c;
  let out = acc;
  if ((acc.occupancy > target || summarized.failure) && !summarized.planned) {
    const fixed = acc.occupancy - acc.view.counts.reduce((a, b) => a + b, 0);
    const keep = c.o.window?.keep ?? { tokens: Math.max(0, target - fixed) };
    // Never a silent drop: each removed range is stored and a marker says what and where it is.
    const windowed = markWindow(
      acc.view,
      windowAbove(acc.view, WindowOptions.parse({ ...c.o.window, keep }), summarized.end, c.ctx.markers),
      { markers: c.ctx.markers, address: c.ctx.address, store: summarizeOptions(c.o).store },
    );
    out = take(c, acc, 'window', measured(c, acc.view, windowed));
    const dropped = took(out) ? windowed.extra(undefined).dropped : null;
    const fallback =
      dropped && summarized.failure ? { from: 'summarize', to: 'window', reason: summarized.failure } : acc.fallback;
    out = { ...out, dropped, fallback };
  }
  if (out.occupancy <= target || summarized.planned) return out;
  const summary = summarized.result?.extra(undefined).summary ? 'the summary ' : '';
  const message = `occupancy is ${out.occupancy}, over the target ${target}: the rest is the head, the first user message, ${summary}and the newest group, which no strategy may remove`;
  return { ...out, warnings: [...out.warnings, { code: 'target_not_met', message }] };
};

/** Runs stages in order, each on what the previous ones left. */
export async function runStages(c: FitContext, acc: Pipeline, stages: readonly FitStage[]): Promise<Pipeline> {
  let out = acc;
  for (const stage of stages) out = await stage(c, out);
  return out;
}
