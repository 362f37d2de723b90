import { z } from 'zod';
import { CompactorError } from '../../errors.js';
import type { FactReport } from '../../summarizers/facts.js';
import type { SummaryPlan } from '../../summarizers/types.js';
import type { ArtifactRef } from '../compact.js';
import { KeepSchema } from '../sliding-window.js';
import type { PreparedHistory, Strategy, StrategyContext, StrategyResult } from '../types.js';
import { onFailure } from './failure.js';
import { allowedModel } from './range.js';
import { rolling } from './rolling.js';
import { runSections } from './sections/run.js';

export const SummarizeOptions = z.strictObject({
  mode: z
    .enum(['rolling', 'sections'])
    .default('rolling')
    .describe('rolling: head + one summary + kept tail; sections: per-section summaries, last-section rotation, QA merge'),
  keep: KeepSchema.default({ messages: 20 }),
  keep_first_user: z.boolean().default(true).describe('keep the first user message (the original task)'),
  summary_role: z
    .enum(['user', 'system', 'pair'])
    .default('user')
    .describe(
      'user; system (formats that accept a system message inside the history); pair (a user request and an assistant answer)',
    ),
  summarizer: z
    .strictObject({
      model: z
        .string()
        .min(1)
        .max(256)
        .optional()
        .describe('the default model or one in COMPACTOR_SUMMARIZER_MODELS; with no LLM configured, none is allowed (400)'),
      prompt: z.string().max(20_000).optional().describe('extra instructions appended to the versioned prompt'),
      max_tokens: z.number().int().min(64).max(32_000).default(1024).describe("the summary's budget"),
      temperature: z.number().min(0).max(2).optional(),
    })
    .default({ max_tokens: 1024 }),
  max_input_tokens: z
    .number()
    .int()
    .min(1024)
    .default(32_000)
    .describe("one summarizer call's input budget: a longer range is summarized in chunks, then merged"),
  on_failure: z
    .enum(['keep', 'window', 'error'])
    .default('keep')
    .describe(
      'keep: history unchanged; window: fall back to the sliding window; error: 502/503/504 (a model not allowed is a 400 in every case)',
    ),
  timeout_ms: z.number().int().min(100).max(600_000).optional().describe('deadline for the whole request'),
  store: z
    .enum(['server', 'inline', 'none'])
    .default('server')
    .describe(
      'server: the summarized range is offloaded as an artifact the summary names; inline: returned in `artifacts[].content`, nothing stored; none: nothing kept',
    ),
  keep_sections: z.number().int().min(1).default(1).describe('sections mode: newest sections kept whole'),
  max_pair_tokens: z.number().int().min(64).default(4096).describe('sections mode: a kept pair over this is summarized alone'),
  max_section_tokens: z
    .number()
    .int()
    .min(256)
    .default(12_800)
    .describe('sections mode: a kept section over this has its oldest pairs summarized'),
  qa: z
    .strictObject({
      enabled: z.boolean().default(true),
      max_sections: z.number().int().min(2).default(10),
      max_tokens: z.number().int().min(256).default(16_384),
    })
    .default({ enabled: true, max_sections: 10, max_tokens: 16_384 })
    .describe('sections mode: past these, the older sections merge into one'),
  summarize_user_messages: z
    .boolean()
    .default(false)
    .describe('sections mode: the QA-merged header summarizes (true) or joins (false) the user messages of the merged sections'),
});

export type SummarizeOptions = z.output<typeof SummarizeOptions>;

export interface SummaryReport {
  id: string;
  parent_id: string | null;
  text: string;
  role: string;
  message_index: number;
  covered_messages: number;
  last_summarized_run_id: string | null;
  summarizer: 'llm' | 'extractive';
  model: string | null;
  cached: boolean;
  facts: FactReport;
}

export interface SummarizeExtra {
  summary: SummaryReport | null;
  /** The summarized ranges offloaded (with `store: inline`, their contents): when a summary was committed. */
  artifacts?: ArtifactRef[];
  plan?: SummaryPlan;
  dropped?: unknown;
}

/**
 * Summarization: the rolling summary (`summarize-rolling.ts`) or sections mode
 * (`summarize-sections.ts`), a failure following `on_failure` (`summarize-failure.ts`).
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
