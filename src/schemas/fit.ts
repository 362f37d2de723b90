import { z } from 'zod';
import { ArtifactRefSchema, Dropped, StageSchema, SummaryPlanSchema, SummaryReportSchema } from '../contract/parts.js';
import { STRATEGIES } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

export const FitRequest = z.strictObject({ ...HistoryFields, ...STRATEGIES.fit.options.shape }).meta({ id: 'FitRequest' });

export const FitResponse = z
  .object({
    ...StrategyResponseFields,
    stages: z.array(StageSchema),
    target: z.number().int().describe('the occupancy aimed at'),
    artifacts: z.array(ArtifactRefSchema),
    summary: SummaryReportSchema.nullable(),
    dropped: Dropped.nullable(),
    call_again_at: z.number().int().describe('the occupancy at which calling again is worth it (guards against thrashing)'),
    plan: SummaryPlanSchema.optional().describe(
      "dry run: the summarizer calls the summarize stage would make; `actions` record what it would summarize, `tokens.after` estimates the summary at its max_tokens budget, and the window stage, which depends on the summary's real size, is not predicted",
    ),
  })
  .meta({ id: 'FitResponse' });
