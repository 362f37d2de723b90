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
  docs: {
    summary: 'Summaries: rolling (one summary of older history) or sections (per-section summaries)',
    returns:
      "The history with its older range replaced by a summary, in the request's format: the summary (`summary`), what happened to each message, occupancy before and after, and the summarizer's bill.",
    description:
      "Keeps the head, the first user message and the tail (`keep`, moved back to a safe boundary, never forward) and replaces the range between them with one summary, written by the configured LLM (any OpenAI-compatible server) or, with none configured, by the deterministic extractive summarizer (`summary.summarizer`). An earlier summary of ours is folded into the new one: exactly one ever exists. Ours means its first line's MAC (`mac=…`, keyed by the installation secret and the caller's key) verifies over the whole summary: a marker typed by a user, printed by a tool, quoted, edited or another key's is conversation, summarized like any other message. Whatever the summarizer writes, the summary ends with the artifact trail of the range (`## Artifact trail (compactor)`: files modified, created, deleted and read, URLs, errors, constraints, tests, paths mentioned, commands with their exit status), built from the structured arguments of the tool calls and their results, merged with the trail of the summary it folds, within `trail_tokens`; other exact identifiers the summary dropped are appended under \"Key references\" (`summary.facts`: found, kept, appended, left out, by class). The range is offloaded as an artifact the summary names, so `POST /v1/expand` gives the full transcript back; `artifacts` lists it (with `store: inline`, with its content, nothing stored: pass it to expand). Identical requests are served from the summary cache (`summary.cached`, nothing billed). Placement: `summary_role` user (default), system (OpenAI formats only) or pair; in formats whose roles alternate (Anthropic, Gemini) a user summary that would follow a user message joins it as an extra text block (an action `rewrite`). `on_failure`: keep (history unchanged, `reason: summarizer_failed`), window (the sliding window stands in, `fallback`), error (502/503/504). An empty or failed summary is never committed. Sections mode (`mode: sections`): every section but the newest `keep_sections` becomes its header plus one summary pair; kept sections have oversized pairs and, past `max_section_tokens`, their oldest pairs summarized; past `qa` limits the older sections merge. A summary pair is a synthetic `compactor_summary` tool exchange where the summarized pairs used tools (openai-chat, openai-responses; gemini inside a section, with the placeholder thought signature in the current turn), else an assistant message starting with `[compactor:section-summary … mac=…]` (always in anthropic, whose tool_use blocks must name declared tools). A second run over the output changes nothing and calls no LLM.",
  },
  answers: ['summarizer', 'store'],
  idle: () => ({ summary: null }),
  // A model that is not allowed is a 400 in every mode and case: below the trigger, with nothing
  // to summarize, in dry runs, whatever on_failure says.
  check: (o, env) => void allowedModel(env.summarizer, o.summarizer.model),
  run,
};
