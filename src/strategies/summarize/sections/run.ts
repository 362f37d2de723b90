import type { ReasonCode } from '../../../contract/codes.js';
import { CompactorError } from '../../../errors.js';
import type { ArtifactRef } from '../../../history/plan/types.js';
import { addUsage, billedBy, type SummaryPlan } from '../../../summarizers/types.js';
import type { PreparedHistory, StrategyContext, StrategyResult } from '../../types.js';
import { billed, PaidFailure } from '../cache.js';
import { dryRunResult } from '../dry.js';
import { allowedModel } from '../range.js';
import { assemble } from './assemble.js';
import type { Section, SectionsOptions } from './model.js';
import { qaMerge } from './qa.js';
import { SectionsRun } from './state.js';
import { olderSections, rotateKept, summarizeOlder } from './steps.js';

type SectionsExtra = { summary: null; plan?: SummaryPlan; artifacts?: ArtifactRef[] };

/**
 * Sections mode (PentAGI's chain summarization): (1) every section but the newest `keep_sections`
 * becomes its header plus one summary pair, concurrently (`steps.ts`); (2) last-section rotation
 * in the kept sections (`steps.ts`); (3) the QA merge of older sections (`qa.ts`); then the plan
 * (`assemble.ts`). Summary pairs are recognized on later calls, so a second run changes nothing and
 * calls no LLM. A dry run follows the same steps without asking for summaries (the merges that
 * depend on their sizes are not predicted, and a warning says so).
 */
export async function runSections(
  h: PreparedHistory,
  o: SectionsOptions,
  ctx: StrategyContext,
): Promise<StrategyResult<SectionsExtra>> {
  const unchanged = (reason: ReasonCode, run?: SectionsRun): StrategyResult<SectionsExtra> => ({
    warnings: run?.warnings ?? [],
    reason,
    extra: () => ({ summary: null }),
  });
  if (!ctx.summarizer) return unchanged('nothing_to_reduce');
  // A model not allowed is a 400 before anything is planned or asked (dry runs too).
  const askedModel = allowedModel(ctx.summarizer, o.summarizer.model);
  const run = new SectionsRun(h, o, ctx, ctx.summarizer);
  try {
    const position = new Map<Section, number>(run.sections.map((s, si) => [s, si]));
    await summarizeOlder(run, olderSections(run), position);
    await rotateKept(run, position);
    if (o.qa.enabled && !ctx.dryRun) await qaMerge(run);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    // Everything answered before the failure was billed: the caller reports it with on_failure;
    // and the summaries already paid for are cached even though this run fails.
    throw new PaidFailure(error, addUsage(run.usage, billedBy(error)), run.bestEffort);
  }
  if (run.calls === 0) return unchanged('nothing_to_reduce', run);
  const plan = assemble(run);
  if (ctx.dryRun) {
    const planned = { calls: run.plannedCalls, model: askedModel };
    const unpredicted = 'the merge past max_section_tokens and the QA merge, which depend on the summaries’ sizes';
    const dry = { summaries: run.calls, budget: o.summarizer.max_tokens, plan: planned, unpredicted };
    return dryRunResult({ ...plan, artifacts: [] }, dry, run.warnings);
  }
  return {
    plan,
    warnings: run.warnings,
    bestEffort: run.bestEffort,
    usage: billed(run.usage, run.model),
    extra: (applied) => ({ summary: null, artifacts: applied?.artifacts ?? [] }),
  };
}
