import { CompactorError } from '../../errors.js';
import type { PreparedHistory, Strategy, StrategyContext, StrategyResult } from '../types.js';
import { onFailure } from './failure.js';
import { type SummarizeExtra, SummarizeOptions } from './options.js';
import { allowedModel } from './range.js';
import { rolling } from './rolling.js';
import { runSections } from './sections/run.js';

export { type SummarizeExtra, SummarizeOptions, type SummaryReport } from './options.js';

/**
 * Summarization: the rolling summary (`rolling.ts`) or sections mode
 * (`sections/`), a failure following `on_failure` (`failure.ts`).
 */
async function run(h: PreparedHistory, o: SummarizeOptions, ctx: StrategyContext): Promise<StrategyResult<SummarizeExtra>> {
  if (o.mode !== 'sections') return rolling(h, o, ctx);
  try {
    return await runSections(h, o, ctx);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return onFailure(h, o, ctx, error, [], o.summarizer.model ?? null);
  }
}

export const summarizeStrategy: Strategy<typeof SummarizeOptions, SummarizeExtra> = {
  kind: 'summarize',
  options: SummarizeOptions,
  idle: () => ({ summary: null }),
  // A model that is not allowed is a 400 in every mode and case: below the trigger, with nothing
  // to summarize, in dry runs, whatever on_failure says.
  check: (o, env) => void allowedModel(env.summarizer, o.summarizer.model),
  run,
};
