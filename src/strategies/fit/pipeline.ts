import type { ErrorCode } from '../../errors.js';
import type { Applied } from '../../history/plan/apply.js';
import { type Composed, compose, identity } from '../../history/plan/compose.js';
import type { Plan } from '../../history/plan/types.js';
import { viewOf } from '../../history/plan/view.js';
import type { Warning } from '../../history/types.js';
import type { NewArtifact } from '../../store/types.js';
import { addUsage } from '../../summarizers/types.js';
import type { Dropped } from '../sliding-window.js';
import type { SummarizeExtra } from '../summarize/index.js';
import { type BilledUsage, NO_BILLED, type PreparedContext, type PreparedHistory, withTotal } from '../types.js';
import type { FitRequest, Measured } from './context.js';
import type { Stage } from './options.js';

/** What the summarize stage left: its result, where what it wrote ends, whether it was only planned (a dry run). */
export interface Summarized {
  readonly result: Measured<SummarizeExtra>['result'] | undefined;
  readonly failure: ErrorCode | undefined;
  /** The window keeps everything before this position of its view. */
  readonly end: number;
  readonly planned: boolean;
}

/**
 * What the stages have done: each takes one and returns the next. A stage plans over `view`; taken, its plan
 * is composed into `composed.plan`, one plan over the input, applied once at the end (`Compactor.run`).
 */
export interface Pipeline {
  readonly composed: Composed;
  readonly view: PreparedHistory;
  readonly occupancy: number;
  readonly usage: BilledUsage;
  readonly stages: readonly Stage[];
  readonly warnings: readonly Warning[];
  readonly bestEffort: readonly NewArtifact[];
  /** The first summarizer failure a stage recovered from. */
  readonly failure: ErrorCode | undefined;
  readonly summarized: Summarized;
  readonly dropped: Dropped | null;
  readonly spliced: PreparedContext['entries'][number] | undefined;
  readonly fallback: Measured<unknown>['result']['fallback'];
}

/** Nothing taken: the input as it came, no bill, no stage. */
function untouched({ h }: FitRequest) {
  return { composed: identity(h.messages.length), view: h, occupancy: h.occupancy, usage: NO_BILLED, stages: [], bestEffort: [] };
}

/** No summary yet: the window may drop anything after the head. */
export const unsummarized = (head: number): Summarized => ({ result: undefined, failure: undefined, end: head, planned: false });

export function start(r: FitRequest): Pipeline {
  const nothing = { warnings: [], failure: undefined, dropped: null, spliced: undefined, fallback: undefined };
  return { ...untouched(r), ...nothing, summarized: unsummarized(r.h.head) };
}

/** Every stage taken dropped (their plans, bill and records); the warnings and the failure stay. */
export function restart(r: FitRequest, acc: Pipeline): Pipeline {
  return { ...acc, ...untouched(r) };
}

/** Two stages' usage summed; the model is the last one billed; a prepared summary spliced in stays reported. */
function addBilled(a: BilledUsage, b: BilledUsage | undefined): BilledUsage {
  return b ? { ...addUsage(a, b), model: b.model ?? a.model, ...(a.prepared ? { prepared: a.prepared } : {}) } : a;
}

/** Records a stage, taking it (its plan composed) if it has one and frees enough (`minSaving`). */
export function take<E>(r: FitRequest, acc: Pipeline, strategy: Stage['strategy'], m: Measured<E>): Pipeline {
  const out = m.result;
  const small = !out.reason && m.freed < r.minSaving;
  const skipped: Warning[] = small
    ? [{ code: 'stage_skipped', message: `${strategy} would free ${m.freed} tokens, under ${Math.ceil(r.minSaving)}: skipped` }]
    : [];
  const reason = small ? 'saving_too_small' : out.reason;
  const usage = withTotal(out.usage);
  const next: Pipeline = {
    ...acc,
    usage: addBilled(acc.usage, out.usage),
    warnings: [...acc.warnings, ...skipped, ...out.warnings.filter((w) => w.code !== 'target_not_met')],
    failure: acc.failure ?? out.failure,
  };
  if (reason || !out.plan || !m.applied) {
    const stage = { strategy, applied: false, tokens_after: acc.occupancy, ...(reason ? { reason } : {}), usage };
    return { ...next, stages: [...acc.stages, stage] };
  }
  const occupancy = acc.occupancy - m.freed;
  return {
    ...next,
    occupancy,
    bestEffort: [...acc.bestEffort, ...(out.bestEffort ?? [])],
    composed: compose(acc.composed, out.plan, m.applied),
    view: viewOf(acc.view, m.applied, occupancy),
    stages: [...acc.stages, { strategy, applied: true, tokens_after: occupancy, usage }],
  };
}

/** Whether the last stage recorded was taken. */
export function took(acc: Pipeline): boolean {
  return acc.stages.at(-1)?.applied === true;
}

/** A prepared summary spliced in: what making it cost is billed here, once, as `usage.prepared` (if not billed before). */
export function splice(acc: Pipeline, entry: PreparedContext['entries'][number]): Pipeline {
  const made = entry.usage;
  if (!made || made.calls === 0) return { ...acc, spliced: entry };
  return { ...acc, spliced: entry, usage: { ...addBilled(acc.usage, made), prepared: withTotal(made) } };
}

/** The last stage taken is only planned (a dry run): recorded as not applied, `dry_run`. */
export function markPlanned(acc: Pipeline): Pipeline {
  const stage = acc.stages.at(-1) as Stage;
  const planned = {
    strategy: stage.strategy,
    applied: false,
    tokens_after: stage.tokens_after,
    reason: 'dry_run',
    usage: stage.usage,
  };
  return { ...acc, stages: [...acc.stages.slice(0, -1), planned] as Stage[] };
}

/** Where what a summarize stage wrote ends in its view (a summary, a joined host, section pairs, a QA header). */
export function writtenEnd(applied: Applied, plan: Plan, head: number): number {
  for (let v = applied.sources.length - 1; v >= 0; v--) {
    const entry = plan.entries[applied.entryOf[v] as number];
    if (entry && (!('index' in entry) || entry.edits.length > 0)) return v + 1;
  }
  return head;
}
