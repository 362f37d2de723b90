import { estimate, usageCost } from '../../cost/estimate.js';
import { applyPlan } from '../../history/plan/apply.js';
import { compose, identity } from '../../history/plan/compose.js';
import { evaluatePlan } from '../../history/plan/evaluate.js';
import { viewOf } from '../../history/plan/view.js';
import { compactStrategy } from '../compact.js';
import { plannedUsage } from '../priced.js';
import { summarizeStrategy } from '../summarize/index.js';
import { type FitContext, type FitRequest, type Measured, measured } from './context.js';
import { type Candidate, payingAt, type Spliceable } from './decide.js';
import { fitCompactOptions, summarizeOptions } from './options.js';
import { beingPrepared, nextRange, resent, spliceable } from './prepare.js';

const UNPRICED = { candidates: [], pending: false, ready: undefined, resent: false };

/**
 * What `decide` needs (STRATEGIES.md, "Cost"), under policy cost below the limit only: compaction
 * clearing all it may, priced; while that leaves the history above the target, a summary over what
 * it leaves, priced; what preparing knows of that summary.
 */
export async function measure(r: FitRequest): Promise<FitContext> {
  if (r.policy === 'tokens' || r.forced) return { ...r, ...UNPRICED };
  const compaction = measured(r, r.h, await compactStrategy.run(r.h, fitCompactOptions(r.o, r.target), r.ctx));
  const view = compaction.applied ? viewOf(r.h, compaction.applied, r.h.occupancy - compaction.freed) : r.h;
  // A summary prepared for this range costs nothing more: its bill is sunk.
  const ready = await spliceable(r, view, summarizeOptions(r.o), false);
  const summary = r.h.occupancy - compaction.freed > r.target ? await summaryCandidate(r, compaction, ready) : undefined;
  const e = compaction.evaluation;
  const compact: Candidate[] = e ? [{ kind: 'compact', estimate: estimate(r.model, e, 0) }] : [];
  // Being made for this history already, or to be asked for now (a range never asked for, or one still being made).
  const being = summary !== undefined && beingPrepared(r, r.h) !== undefined;
  const next =
    summary && r.preparing && !being ? await nextRange(r, { view: r.h, occupancy: r.h.occupancy }, compaction) : undefined;
  const known = next?.known?.state;
  const pending = being || (next !== undefined && (known === undefined || known === 'started' || known === 'running'));
  const candidates = summary ? [...compact, summary] : compact;
  const again = ready !== undefined && resent(ready.entry, r.h);
  return {
    ...r,
    candidates,
    pending,
    ready,
    resent: again,
    compaction,
    summaryDueAt: await dueAt(r, compaction, ready, summary),
    next,
  };
}

/** A dry-run summary over what compaction leaves, composed with it and priced (a prepared one's bill is sunk). */
async function summaryCandidate(r: FitRequest, compaction: Measured<unknown>, ready: Spliceable | undefined) {
  const { h, model } = r;
  const view = compaction.applied ? viewOf(h, compaction.applied, h.occupancy - compaction.freed) : h;
  const dry = await summarizeStrategy.run(view, ready?.options ?? summarizeOptions(r.o), { ...r.ctx, dryRun: true });
  if (!dry.plan || dry.reason) return undefined;
  const none = identity(h.messages.length);
  const first = compaction.result.plan && compaction.applied ? compose(none, compaction.result.plan, compaction.applied) : none;
  const { plan } = compose(first, dry.plan, applyPlan(view, dry.plan, r.count));
  const calls = dry.extra(undefined).plan;
  const summarizer = calls && !ready ? usageCost(model.summarizer, plannedUsage(calls, plan.unwritten?.tokens ?? 0)) : 0;
  return { kind: 'summarize' as const, estimate: estimate(model, evaluatePlan(plan, applyPlan(h, plan, r.count)), summarizer) };
}

/**
 * Where a summary is expected to be made (prepared summaries are timed from it): where the summary
 * candidate pays or is forced; without one, where the history would cross the target after compaction.
 */
async function dueAt(r: FitRequest, compaction: Measured<unknown>, ready: Spliceable | undefined, summary?: Candidate) {
  if (summary) return payingAt(r, summary.estimate);
  // Under the target after compaction: no summary before the history crosses it, nor before one
  // pays (priced as if the target allowed it, only while a prepared one could be asked for).
  const crossing = Math.min(r.limit + 1, r.target + 1 + compaction.freed);
  const priced = r.preparing && 2 * r.h.occupancy >= r.target ? await summaryCandidate(r, compaction, ready) : undefined;
  return priced ? Math.max(crossing, payingAt(r, priced.estimate)) : crossing;
}
