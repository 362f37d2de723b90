import type { Plan } from '../../history/plan/types.js';
import type { Warning } from '../../history/types.js';
import type { SummaryPlan } from '../../summarizers/types.js';
import type { StrategyResult } from '../types.js';

/** What a summarize dry run knows besides its plan: the summaries it did not write. */
export interface DryRun {
  /** How many summaries the run would write. */
  summaries: number;
  /** Each summary's budget (`summarizer.max_tokens`). */
  budget: number;
  plan: SummaryPlan;
  /** What the dry run does not predict, if anything, for the warning. */
  unpredicted?: string;
}

/**
 * A summarize dry run's answer (`dry_run`: compute and report everything, change nothing, call
 * no LLM): the plan the real run would follow, with empty summaries in the summaries' places (so
 * the actions are the real run's), and the summaries' tokens estimated at their full budget each
 * (the real ones are often shorter, or longer by the exact facts they must keep), which a
 * `dry_run_estimate` warning says, with whatever else is not predicted.
 */
export function dryRunResult(
  planned: Plan,
  dry: DryRun,
  warnings: Warning[],
): StrategyResult<{ summary: null; plan: SummaryPlan }> {
  const each = dry.summaries === 1 ? 'the summary fills' : `each of the ${dry.summaries} summaries fills`;
  warnings.push({
    code: 'dry_run_estimate',
    message: `tokens.after assumes ${each} its summarizer.max_tokens budget (${dry.budget} tokens); a real run's may be shorter, or longer by the exact facts it keeps${dry.unpredicted ? `. Not predicted: ${dry.unpredicted}` : ''}`,
  });
  return {
    plan: { ...planned, unwritten: { calls: dry.plan.calls.length, tokens: dry.summaries * dry.budget } },
    warnings,
    extra: () => ({ summary: null, plan: dry.plan }),
  };
}
