import { modelFor, pricedResult } from '../priced.js';
import { allowedModel } from '../summarize/range.js';
import type { PreparedHistory, Strategy, StrategyContext, StrategyResult } from '../types.js';
import { costFit } from './cost.js';
import { FIT_RESPONSE, type FitExtra, FitOptions, limitOf, targetOf } from './options.js';
import { withPrepare } from './prepare.js';
import { finish } from './result.js';
import { FitRun } from './run.js';
import { compactStage, refoldStage, runStages, summarizeStage, windowStage } from './stages.js';

export { type FitExtra, FitOptions, type Stage } from './options.js';

/**
 * Fit under `policy: tokens` (Manning 6.2.6, the hierarchical optimizer): above the target,
 * compact (aimed at the target); still above, summarize; window only if the summarizer failed or
 * the history is still above. A stage that would free less than `min_saving_fraction` is skipped.
 */
async function tokensFit(run: FitRun): Promise<StrategyResult<FitExtra>> {
  if (run.h.occupancy <= run.target) return finish(run, { decision: 'defer', callAgainAt: run.target, reason: 'below_trigger' });
  await runStages(run, [compactStage, summarizeStage, refoldStage, windowStage]);
  return finish(run, { decision: 'reduce', callAgainAt: Math.max(run.target, Math.ceil(run.occupancy * 1.1)) });
}

/**
 * Fit: get occupancy under the target, compacting first, summarizing if still above, windowing
 * as the last resort. The request is resolved once (`FitRun`: target, limit, cost model); each
 * stage plans over the view the previous one leaves; the plans are composed on the input's
 * indices and applied once (`Compactor.run`). Under the default `policy: cost` (`cost.ts`) a
 * reduction is made only where it lowers the agent's bill, or forced above `limit`; under `policy:
 * tokens`, whenever over the target. Always a valid history: when the target cannot be met
 * without breaking a structural rule, `target_not_met` names the irreducible size.
 */
async function run(h: PreparedHistory, o: FitOptions, ctx: StrategyContext): Promise<StrategyResult<FitExtra>> {
  const fit = new FitRun(h, o, ctx);
  const result = await (o.policy === 'tokens' ? tokensFit(fit) : costFit(fit));
  return withPrepare(fit, result);
}

export const fitStrategy: Strategy<typeof FitOptions, FitExtra, typeof FIT_RESPONSE> = {
  kind: 'fit',
  options: FitOptions,
  response: FIT_RESPONSE,
  idle: (h, o, cost) => {
    const model = modelFor(h, o, { cost });
    return {
      stages: [],
      target: 0,
      artifacts: [],
      summary: null,
      dropped: null,
      call_again_at: h.occupancy,
      cost: { ...pricedResult(model, o, undefined), decision: 'defer' },
    };
  },
  check: (o, env) => {
    limitOf(o, env.profile, targetOf(o, env.profile));
    // The summarize stage's model is a 400 even when the stage would not run.
    allowedModel(env.summarizer, o.summarize?.summarizer?.model, 'summarize.summarizer.model');
  },
  run,
};
