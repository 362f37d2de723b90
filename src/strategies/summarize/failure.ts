import type { CompactorError } from '../../errors.js';
import type { Warning } from '../../history/types.js';
import { billedBy } from '../../summarizers/types.js';
import { windowStrategy } from '../sliding-window.js';
import type { PreparedHistory, StrategyContext, StrategyResult } from '../types.js';
import { billed, PaidFailure } from './cache.js';
import type { SummarizeExtra, SummarizeOptions } from './options.js';

/** Follows `on_failure` after a failed summary: unchanged, the sliding window, or the error itself. */
export async function onFailure(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: StrategyContext,
  error: CompactorError,
  warnings: Warning[],
  model: string | null,
): Promise<StrategyResult<SummarizeExtra>> {
  const cost = billed(billedBy(error), model);
  // Summaries paid for before the failure (sections mode), cached all the same.
  const bestEffort = error instanceof PaidFailure ? [...error.paid] : [];
  // A request the summarizer refused as invalid (a model not allowed) is bad input, never a fallback.
  if (o.on_failure === 'error' || error.status < 500) throw error;
  warnings.push({ code: 'summarizer_failed', message: `${error.code}: ${error.message}` });
  if (o.on_failure === 'keep') {
    return {
      warnings,
      reason: 'summarizer_failed',
      failure: error.code,
      usage: cost,
      bestEffort,
      extra: () => ({ summary: null }),
    };
  }
  const fallback = await windowStrategy.run(h, { keep: o.keep, keep_first_user: o.keep_first_user }, ctx);
  return {
    ...fallback,
    warnings: [...warnings, ...fallback.warnings],
    usage: cost,
    bestEffort,
    fallback: { from: 'summarize', to: 'window', reason: error.code },
    failure: error.code,
    extra: (applied) => ({ summary: null, dropped: fallback.extra(applied).dropped }),
  };
}
