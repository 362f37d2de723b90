import { z } from 'zod';
import type { ArtifactRefSchema, SummaryPlanSchema, SummaryReportSchema } from '../../contract/parts.js';
import { COST_FIELDS } from '../../cost/fields.js';
import type { CostReport } from '../../cost/model.js';
import { KeepSchema } from '../sliding-window.js';

/** What shapes one summary: its model, extra instructions, budget and temperature (one schema, read by every mode). */
export const SummarizerOptions = z.strictObject({
  model: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe('the default model or one in COMPACTOR_SUMMARIZER_MODELS; with no LLM configured, none is allowed (400)'),
  prompt: z.string().max(20_000).optional().describe('extra instructions appended to the versioned prompt'),
  max_tokens: z.number().int().min(64).max(32_000).default(1024).describe("the summary's budget"),
  temperature: z
    .number()
    .min(0)
    .max(2)
    .optional()
    .describe("the summarizer's sampling temperature; omitted: the model's default"),
});

export const SummarizeOptions = z.strictObject({
  mode: z
    .enum(['rolling', 'sections'])
    .default('rolling')
    .describe('rolling: head + one summary + kept tail; sections: per-section summaries, last-section rotation, QA merge'),
  keep: KeepSchema.default({ messages: 20 }).describe(
    'the newest history kept verbatim after the summary: runs, messages or tokens',
  ),
  keep_first_user: z.boolean().default(true).describe('keep the first user message (the original task)'),
  summary_role: z
    .enum(['user', 'system', 'pair'])
    .default('user')
    .describe(
      "user (recommended); system (formats that accept a system message inside the history): the summary is text derived from the conversation, untrusted tool output included (the extractive summarizer quotes it; an LLM's summary and the artifact trail restate it), placed where the model gives the most authority, so an instruction injected into a tool result speaks as the system: prefer user; pair (a user request and an assistant answer)",
    ),
  summarizer: SummarizerOptions.default({ max_tokens: 1024 }).describe(
    "the summary's model, extra instructions, budget and temperature",
  ),
  max_input_tokens: z
    .number()
    .int()
    .min(1024)
    .default(32_000)
    .describe("one summarizer call's input budget: a longer range is summarized in chunks, then merged"),
  trail_tokens: z
    .number()
    .int()
    .min(0)
    .max(32_000)
    .default(3000)
    .describe(
      "the artifact trail's budget (estimated tokens): files modified, created, deleted and read, URLs, errors, constraints, tests, paths mentioned, commands, in that priority, after the summary's prose; 0: no trail",
    ),
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
      enabled: z.boolean().default(true).describe('whether older sections are ever merged'),
      max_sections: z.number().int().min(2).default(10).describe('more sections than this: the older ones merge'),
      max_tokens: z
        .number()
        .int()
        .min(256)
        .default(16_384)
        .describe('sections over this many tokens in all: the older ones merge'),
    })
    .default({ enabled: true, max_sections: 10, max_tokens: 16_384 })
    .describe('sections mode: past these, the older sections merge into one'),
  summarize_user_messages: z
    .boolean()
    .default(false)
    .describe('sections mode: the QA-merged header summarizes (true) or joins (false) the user messages of the merged sections'),
  ...COST_FIELDS,
});

export type SummarizeOptions = z.output<typeof SummarizeOptions>;

export type SummaryReport = z.output<typeof SummaryReportSchema>;

export interface SummarizeExtra {
  summary: SummaryReport | null;
  /** The summarized ranges offloaded (with `store: inline`, their contents): when a summary was committed. */
  artifacts?: z.output<typeof ArtifactRefSchema>[];
  plan?: z.output<typeof SummaryPlanSchema>;
  dropped?: unknown;
  /** With pricing or usage given: what the summary costs and saves. */
  cost?: CostReport;
}

/** The options one summary request reads, in both modes: its summarizer, input budget and deadline. */
export type SummaryOptions = Pick<SummarizeOptions, 'summarizer' | 'max_input_tokens' | 'timeout_ms' | 'trail_tokens'>;

/** The options sections mode reads. */
export type SectionsOptions = Pick<
  SummarizeOptions,
  | 'keep_sections'
  | 'max_pair_tokens'
  | 'max_section_tokens'
  | 'qa'
  | 'summarize_user_messages'
  | 'summarizer'
  | 'max_input_tokens'
  | 'timeout_ms'
  | 'store'
  | 'trail_tokens'
>;
