import { z } from 'zod';
import { ArtifactRefSchema, Dropped, SummaryPlanSchema, SummaryReportSchema } from '../contract/parts.js';
import { STRATEGIES } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

export const SummarizeRequest = z
  .strictObject({ ...HistoryFields, ...STRATEGIES.summarize.options.shape })
  .meta({ id: 'SummarizeRequest' });

export const SummarizeResponse = z
  .object({
    ...StrategyResponseFields,
    summary: SummaryReportSchema.nullable(),
    plan: SummaryPlanSchema.optional(),
    dropped: Dropped.optional().describe('when the sliding window stood in for a failed summary'),
    artifacts: z
      .array(ArtifactRefSchema)
      .optional()
      .describe(
        'when a summary was committed: the summarized ranges it names (kind summary_range or section_range); with store inline, their content, to pass to /v1/expand',
      ),
  })
  .meta({ id: 'SummarizeResponse' });
