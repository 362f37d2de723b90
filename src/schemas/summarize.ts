import { z } from 'zod';
import { STRATEGIES } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';
import { ArtifactRefSchema } from './compact.js';
import { Dropped } from './window.js';

export const SummarizeRequest = z
  .strictObject({ ...HistoryFields, ...STRATEGIES.summarize.options.shape })
  .meta({ id: 'SummarizeRequest' });

export const SummaryReportSchema = z
  .object({
    id: z.string().describe('the art_… artifact holding the summarized range (its content address with store none)'),
    parent_id: z.string().nullable().describe('the earlier summary this one folded'),
    text: z.string(),
    role: z.string().describe('user, system, pair, or "<role> (joined)" when it joined a neighbour to keep roles alternating'),
    message_index: z.number().int().describe('where the summary sits in the returned messages'),
    covered_messages: z.number().int().describe('original messages it stands for, through every earlier summary'),
    last_summarized_run_id: z.string().nullable(),
    summarizer: z.enum(['llm', 'extractive']),
    model: z.string().nullable(),
    cached: z
      .boolean()
      .describe('nothing was billed for the summary: it came from the summary cache, or from an identical request in flight'),
    facts: z.object({ found: z.number().int(), kept: z.number().int(), appended: z.number().int() }),
  })
  .meta({ id: 'SummaryReport' });

export const SummaryPlanSchema = z
  .object({
    calls: z.array(z.object({ purpose: z.enum(['chunk', 'merge', 'summary']), input_tokens: z.number().int() })),
    model: z.string().nullable(),
  })
  .meta({
    id: 'SummaryPlan',
    description:
      "The summarizer calls a dry run would make (sections mode: those known in advance; merges past max_section_tokens and qa depend on the summaries written). The dry run's `actions` record what the real run would do to each message; `tokens.after` assumes each summary fills summarizer.max_tokens (`dry_run_estimate` warning).",
  });

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
