import { estimate, usageCost } from '../../cost/estimate.js';
import { applyPlan } from '../../history/plan/apply.js';
import { compose, identity } from '../../history/plan/compose.js';
import { evaluatePlan } from '../../history/plan/evaluate.js';
import { viewOf } from '../../history/plan/view.js';
import { compactStrategy } from '../compact.js';
import { plannedUsage } from '../priced.js';
import { summarizeStrategy } from '../summarize/index.js';
import type { PreparedHistory } from '../types.js';
import { type FitContext, type FitRequest, type Measured, measured } from './context.js';
import { type Candidate, payingAt, type Spliceable } from './decide.js';
import { fitCompactOptions, summarizeOptions } from './options.js';
import { beingPrepared, nextRange, spliceable } from './prepare.js';

/**
 * What `decide` needs (STRATEGIES.md, "Cost"): under policy cost below the limit, the compaction
 * stage planned over the input, clearing all it may, and priced; when it leaves the history above
 * the target, a summary over what it leaves, priced; what preparing knows of that summary.
 * Policy tokens and forced runs price nothing: every stage runs while above the target.
 */
export async function measure(r: FitRequest): Promise<FitContext> {
  const unpriced = {
    candidates: [],
    pending: false,
    ready: undefined,
    compaction: undefined,
    summaryDueAt: undefined,
    next: undefined,
  };
  if (r.policy === 'tokens' || r.forced) return { ...r, ...unpriced };
  const compaction = measured(r, r.h, await compactStrategy.run(r.h, fitCompactOptions(r.o, r.target), r.ctx));
  const view = compaction.applied ? viewOf(r.h, compaction.applied, r.h.occupancy - compaction.freed) : r.h;
  // A summary prepared for this range costs nothing more: its bill is sunk.
  const ready = await spliceable(r, view, summarizeOptions(r.o), false);
  const summary = r.h.occupancy - compaction.freed > r.target ? await summaryCandidate(r, compaction, view, ready) : undefined;
  const compact: Candidate[] = compaction.evaluation
    ? [{ kind: 'compact', estimate: estimate(r.model, compaction.evaluation, 0) }]
    : [];
  const candidates = summary ? [...compact, summary] : compact;
  // Being made for this history already, or to be asked for now (a range never asked for, or one still being made).
  const being = summary !== undefined && beingPrepared(r, r.h) !== undefined;
  const next = summary && r.preparing && !being ? await nextRange(r, r.h, r.h.occupancy, compaction) : undefined;
  const known = next?.known?.state;
  const pending = being || (next !== undefined && (known === undefined || known === 'started' || known === 'running'));
  const summaryDueAt = await dueAt(r, compaction, view, ready, summary);
  return { ...r, candidates, pending, ready, compaction, summaryDueAt, next };
}

/**
 * The summary candidate: the summarize stage planned as a dry run over what compaction leaves,
 * composed with it into one plan over the input and priced, its summarizer calls at their planned
 * input and the summary at its budget (nothing for a prepared one: its bill is sunk).
 */
async function summaryCandidate(
  r: FitRequest,
  compaction: Measured<unknown>,
  view: PreparedHistory,
  ready: Spliceable | undefined,
): Promise<Candidate | undefined> {
  const { h, model } = r;
  const dry = await summarizeStrategy.run(view, ready?.options ?? summarizeOptions(r.o), { ...r.ctx, dryRun: true });
  if (!dry.plan || dry.reason) return undefined;
  const compacted = compaction.result.plan;
  const first =
    compacted && compaction.applied
      ? compose(identity(h.messages.length), compacted, compaction.applied)
      : identity(h.messages.length);
  const composed = compose(first, dry.plan, applyPlan(view, dry.plan, r.count));
  const calls = dry.extra(undefined).plan;
  const unwritten = composed.plan.unwritten?.tokens ?? 0;
  const summarizer = calls && !ready ? usageCost(model.summarizer, plannedUsage(calls, unwritten)) : 0;
  return {
    kind: 'summarize',
    estimate: estimate(model, evaluatePlan(composed.plan, applyPlan(h, composed.plan, r.count)), summarizer),
  };
}

/**
 * The occupancy at which a summary is expected to be made: where the summary candidate pays (or
 * is forced); without one (compaction leaves the history under the target), the later of where
 * the history would cross the target after compaction and, while preparing, where a summary
 * priced now would pay. Prepared summaries are timed from it.
 */
async function dueAt(
  r: FitRequest,
  compaction: Measured<unknown>,
  view: PreparedHistory,
  ready: Spliceable | undefined,
  summary: Candidate | undefined,
): Promise<number> {
  if (summary) return payingAt(r, summary.estimate);
  // Under the target after compaction: no summary before the history crosses it, nor before one
  // pays (priced as if the target allowed it, only while a prepared one could be asked for).
  const crossing = Math.min(r.limit + 1, r.target + 1 + compaction.freed);
  const priced = r.preparing && 2 * r.h.occupancy >= r.target ? await summaryCandidate(r, compaction, view, ready) : undefined;
  return priced ? Math.max(crossing, payingAt(r, priced.estimate)) : crossing;
}
