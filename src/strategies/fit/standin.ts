import { CompactorError } from '../../errors.js';
import type { Warning } from '../../history/types.js';
import { ExtractiveSummarizer } from '../../summarizers/extractive.js';
import type { Summarizer } from '../../summarizers/types.js';
import { summarizeStrategy } from '../summarize/index.js';
import type { SummarizeExtra, SummarizeOptions } from '../summarize/options.js';
import type { PreparedHistory, StrategyContext, StrategyResult } from '../types.js';
import type { FitRequest } from './context.js';

/** The warning a summary made by the extractive summarizer in place of the LLM's carries. */
export const STANDIN_WARNING = 'summary_extractive_standin';

const EXTRACTIVE = new ExtractiveSummarizer();

/** Whether this run must not wait on an LLM summarizer (`summarizer_wait: never`) while one is configured. */
export function neverWaits(r: Pick<FitRequest, 'o' | 'ctx'>): boolean {
  return r.o.summarizer_wait === 'never' && r.ctx.summarizer?.kind === 'llm' && r.ctx.dryRun !== true;
}

/**
 * The LLM summarizer as the summary cache knows it (same kind, same model, so the same key),
 * answering only from the cache: asked to summarize, it fails at once, calling no model.
 */
function cacheOnly(llm: Summarizer): Summarizer {
  return {
    kind: llm.kind,
    plan: (request) => llm.plan(request),
    ...(llm.model ? { model: (requested: string | undefined) => llm.model?.(requested) ?? null } : {}),
    summarize: () =>
      Promise.reject(new CompactorError('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'not in the summary cache; no model is called')),
  };
}

/**
 * A summary that never waits on a model: the LLM's when the summary cache holds it for this range
 * (a prepared one that is ready, or one made before), else the extractive summarizer's, at once,
 * with the `summary_extractive_standin` warning. It is a summary of ours like any other: the next
 * summary (an LLM's, prepared off the request path) folds it.
 */
export async function summarizeNoWait(
  view: PreparedHistory,
  o: SummarizeOptions,
  ctx: StrategyContext,
  llm: Summarizer,
): Promise<StrategyResult<SummarizeExtra>> {
  // No flight shared: one in flight would be waited for.
  const cached = await summarizeStrategy.run(
    view,
    { ...o, on_failure: 'keep' },
    { ...ctx, summarizer: cacheOnly(llm), flights: undefined },
  );
  if (!cached.failure) return cached;
  const made = await summarizeStrategy.run(view, o, { ...ctx, summarizer: EXTRACTIVE });
  if (!made.plan || made.reason) return made;
  const warning: Warning = {
    code: STANDIN_WARNING,
    message:
      'no LLM summary of this range was ready (prepared or cached): the extractive summary stands in, made without a model call; the next summary folds it',
  };
  return { ...made, warnings: [...made.warnings, warning] };
}
