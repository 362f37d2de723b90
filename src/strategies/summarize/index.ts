import { z } from 'zod';
import { ArtifactRefSchema, CostSchema, Dropped, SummaryPlanSchema, SummaryReportSchema } from '../../contract/parts.js';
import { CompactorError } from '../../errors.js';
import { costAsked, modelFor, plannedUsage, pricedResult } from '../priced.js';
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
async function summarize(h: PreparedHistory, o: SummarizeOptions, ctx: StrategyContext): Promise<StrategyResult<SummarizeExtra>> {
  if (o.mode !== 'sections') return rolling(h, o, ctx);
  try {
    return await runSections(h, o, ctx);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return onFailure(h, o, ctx, error, [], o.summarizer.model ?? null);
  }
}

const SUMMARIZE_RESPONSE = {
  summary: SummaryReportSchema.nullable().describe('the summary written or reused; null when none was made'),
  plan: SummaryPlanSchema.optional().describe('dry run: the summarizer calls the real run would make'),
  dropped: Dropped.optional().describe('when the sliding window stood in for a failed summary'),
  artifacts: z
    .array(ArtifactRefSchema)
    .optional()
    .describe(
      'when a summary was committed: the summarized ranges it names (kind summary_range or section_range); with store inline, their content, to pass to /v1/expand',
    ),
  cost: CostSchema.optional().describe('when pricing or usage is given'),
};

/**
 * A summary, with its `cost` when pricing or usage is given: what it saves per call against the
 * cached tokens it rewrites and what the summarizer billed (a dry run: its planned calls at their
 * input and the summaries at their budget).
 */
async function run(h: PreparedHistory, o: SummarizeOptions, ctx: StrategyContext): Promise<StrategyResult<SummarizeExtra>> {
  const result = await summarize(h, o, ctx);
  if (!costAsked(o, ctx)) return result;
  const model = modelFor(h, o, ctx, ctx.summarizer?.model?.(o.summarizer.model) ?? null);
  return {
    ...result,
    extra: (applied) => {
      const extra = result.extra(applied);
      const plan = result.plan;
      const usage = plan?.unwritten && extra.plan ? plannedUsage(extra.plan, plan.unwritten.tokens) : result.usage;
      const done = plan && applied ? { plan, applied, usage } : undefined;
      return { ...extra, cost: pricedResult(model, o, done) };
    },
  };
}

export const summarizeStrategy: Strategy<typeof SummarizeOptions, SummarizeExtra, typeof SUMMARIZE_RESPONSE> = {
  kind: 'summarize',
  options: SummarizeOptions,
  response: SUMMARIZE_RESPONSE,
  idle: () => ({ summary: null }),
  // A model that is not allowed is a 400 in every mode and case: below the trigger, with nothing
  // to summarize, in dry runs, whatever on_failure says.
  check: (o, env) => void allowedModel(env.summarizer, o.summarizer.model),
  run,
};
