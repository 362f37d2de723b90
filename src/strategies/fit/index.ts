import { modelFor, pricedResult } from '../priced.js';
import { allowedModel } from '../summarize/range.js';
import type { PreparedHistory, Strategy, StrategyContext } from '../types.js';
import { type FitContext, resolve } from './context.js';
import { type Decision, decide } from './decide.js';
import { measure } from './measure.js';
import { FIT_RESPONSE, type FitExtra, FitOptions, limitOf, targetOf } from './options.js';
import { type Pipeline, restart, start } from './pipeline.js';
import { withPrepare } from './prepare.js';
import { deferred, type FitResult, finish } from './result.js';
import { compactStage, type FitStage, refoldStage, runStages, summarizeStage, summarizeWith, windowStage } from './stages.js';

export { type FitExtra, FitOptions, type Stage } from './options.js';
export type { FitResult } from './result.js';

/** Compact, summarize while still above, refold a splice, window as the last resort (Manning 6.2.6). */
const LADDER: readonly FitStage[] = [compactStage, summarizeStage, refoldStage, windowStage];

/** The stages a decision to reduce runs. */
function stagesOf(d: Exclude<Decision, { kind: 'defer' }>): readonly FitStage[] {
  if (d.kind === 'compact') return [compactStage];
  if (d.kind === 'summarize') return [compactStage, summarizeWith(() => undefined)];
  if (d.kind === 'splice') return [compactStage, summarizeWith(() => d.prepared)];
  return LADDER;
}

/** Runs what `decide` chose; returns the answer and the pipeline it came from. */
async function execute(c: FitContext, d: Decision): Promise<[Pipeline, FitResult]> {
  if (d.kind === 'defer') return [start(c), deferred(c, start(c), d)];
  const acc = await runStages(c, start(c), stagesOf(d));
  if ((d.kind === 'summarize' || d.kind === 'splice') && d.ifFailed && acc.summarized.failure) {
    const back = restart(c, acc);
    return [back, deferred(c, back, d.ifFailed)];
  }
  const soon = Math.ceil(acc.occupancy * 1.1);
  const callAgainAt = Math.max(c.target, c.policy === 'tokens' ? soon : Math.min(c.limit + 1, soon));
  return [acc, finish(c, acc, { decision: d.kind === 'forced' ? 'forced' : 'reduce', callAgainAt })];
}

/**
 * Fit: get occupancy under the target, compacting first, summarizing if still above, windowing
 * as the last resort. The request is resolved and measured once (`FitContext`), `decide` chooses,
 * and the stages it chose each plan over the view the previous one leaves; the plans are
 * composed on the input's indices and applied once (`Compactor.run`). Under the default `policy:
 * cost` a reduction is made only where it lowers the agent's bill, or forced above `limit`; under
 * `policy: tokens`, whenever over the target. Always a valid history: when the target cannot be
 * met without breaking a structural rule, `target_not_met` names the irreducible size.
 */
async function run(h: PreparedHistory, o: FitOptions, ctx: StrategyContext): Promise<FitResult> {
  const c = await measure(resolve(h, o, ctx));
  const [acc, result] = await execute(c, decide(c));
  return withPrepare(c, acc, result);
}

export const fitStrategy: Strategy<typeof FitOptions, FitExtra, typeof FIT_RESPONSE, FitResult> = {
  kind: 'fit',
  options: FitOptions,
  response: FIT_RESPONSE,
  idle: (h, o, cost) => ({
    stages: [],
    target: 0,
    artifacts: [],
    summary: null,
    dropped: null,
    call_again_at: h.occupancy,
    cost: pricedResult(modelFor(h, o, { cost }), o, undefined),
  }),
  check: (o, env) => {
    limitOf(o, env.profile, targetOf(o, env.profile));
    // The summarize stage's model is a 400 even when the stage would not run.
    allowedModel(env.summarizer, o.summarize?.summarizer?.model, 'summarize.summarizer.model');
  },
  run,
};
