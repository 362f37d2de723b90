import type { Action, Warning } from '../history/types.js';
import type { SummaryPlan } from '../summarizers/types.js';
import type { PreparedHistory, StrategyOutput } from './types.js';

/** What a summarize dry run knows: the actions, and what the summaries it did not write would add. */
export interface DryRun {
  /** One per input message, as the real run would record them. */
  actions: Action[];
  /** Tokens of the messages the run would insert or grow, the summaries' text left out. */
  framing: number;
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
 * no LLM): the history unchanged, the actions a real run would record, and the summaries' tokens
 * estimated at their full budget each (the real ones are often shorter, or longer by the exact
 * facts they must keep), which a `dry_run_estimate` warning says, with whatever else is not predicted.
 */
export function dryRunOutput(
  h: PreparedHistory,
  dry: DryRun,
  warnings: Warning[],
): StrategyOutput<{ summary: null; plan: SummaryPlan }> {
  const each = dry.summaries === 1 ? 'the summary fills' : `each of the ${dry.summaries} summaries fills`;
  warnings.push({
    code: 'dry_run_estimate',
    message: `tokens.after assumes ${each} its summarizer.max_tokens budget (${dry.budget} tokens); a real run's may be shorter, or longer by the exact facts it keeps${dry.unpredicted ? `. Not predicted: ${dry.unpredicted}` : ''}`,
  });
  return {
    messages: [...h.messages],
    actions: dry.actions,
    warnings,
    addedTokens: dry.framing + dry.summaries * dry.budget,
    extra: { summary: null, plan: dry.plan },
  };
}
