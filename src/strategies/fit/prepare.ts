import { applyPlan } from '../../history/plan/apply.js';
import { viewOf } from '../../history/plan/view.js';
import type { PreparedHistory } from '../../history/prepared.js';
import type { NewArtifact } from '../../store/types.js';
import { compactStrategy } from '../compact.js';
import type { SummarizeOptions } from '../summarize/options.js';
import { type PreparedEntry, type PreparedRange, preparedIn, rollingRange } from '../summarize/prepared.js';
import type { StrategyResult } from '../types.js';
import { type FitExtra, fitCompactOptions, summarizeOptions } from './options.js';
import type { FitRun } from './run.js';

/** How long a call above `limit` waits for a summary still being prepared, unless `prepare.wait_ms` says. */
export const PREPARE_WAIT_ABOVE_LIMIT_MS = 5000;
/**
 * How many of the agent's calls before a summary is due preparing starts, unless `prepare.at`
 * says: time for the summarizer to answer while the agent works (a 1.5 s summarizer against
 * 0.3 s model calls is five), and no earlier, since the range prepared ends where the history
 * ends when it starts (what the agent appends after that stays verbatim, and the next summary
 * comes that much sooner).
 */
export const PREPARE_LEAD_CALLS = 2;
/** The agent's recent calls whose growth is averaged (`growthPerCall`). */
const GROWTH_CALLS = 4;
/** How often a waiting call looks for the prepared summary in the summary cache. */
const POLL_MS = 100;

/** Whether this run prepares and splices: the service offers it, the request or its default wants it, and it is real. */
export function preparing(run: FitRun): boolean {
  const offered = run.ctx.prepared;
  if (!offered || run.ctx.dryRun) return false;
  return run.o.prepare?.enabled ?? offered.byDefault;
}

/**
 * A summary the caller is already preparing for this conversation, its range still held
 * byte-identical by `view`: while it is made, fit neither starts another nor makes its own.
 */
export function beingPrepared(run: FitRun, view: PreparedHistory): PreparedEntry | undefined {
  if (!preparing(run)) return undefined;
  return preparedIn(view, summarizeOptions(run.o), run.ctx, run.ctx.prepared?.entries ?? [], ['started', 'running'])?.entry;
}

/** Resolves true once `id` is in the summary cache, false after `ms` (or when the request is aborted). */
async function cached(run: FitRun, id: string, ms: number): Promise<boolean> {
  const { recall, signal } = run.ctx;
  if (!recall) return false;
  const until = Date.now() + ms;
  for (;;) {
    if ((await recall([id])).has(id)) return true;
    if (Date.now() + POLL_MS > until || signal?.aborted) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * The prepared summary `view` can splice in: a ready one whose range it holds byte-identical at
 * the same place; else, when waiting is allowed (`wait_ms`, by default only above `limit`), one
 * still being made, once it is ready in time. Undefined: summarize as without preparing.
 */
export async function spliceable(
  run: FitRun,
  view: PreparedHistory,
  o: SummarizeOptions,
  wait: boolean,
): Promise<{ entry: PreparedEntry; options: SummarizeOptions } | undefined> {
  if (!preparing(run)) return undefined;
  const { ctx } = run;
  const entries = ctx.prepared?.entries ?? [];
  const ready = preparedIn(view, o, ctx, entries, ['ready', 'spliced']);
  if (ready || !wait) return ready;
  const waitMs = run.o.prepare?.wait_ms ?? (run.forced ? PREPARE_WAIT_ABOVE_LIMIT_MS : 0);
  if (waitMs <= 0) return undefined;
  const making = preparedIn(view, o, ctx, entries, ['started', 'running']);
  return making && (await cached(run, making.entry.id, waitMs)) ? making : undefined;
}

/**
 * The history as the next call's summarize stage will see it: under policy cost, after the
 * compaction stage clears all it may (deterministic: what it clears in the range now it clears
 * the same way then), so that a range prepared now is still byte-identical after that call's
 * compaction; with the originals that compaction offloads, to store now. Under policy tokens
 * (compaction stops at the target) the output as it is.
 */
async function asNextCallSees(run: FitRun): Promise<{ view: PreparedHistory; early: NewArtifact[] }> {
  if (run.o.policy === 'tokens') return { view: run.view, early: [] };
  // Nothing taken yet (a deferral): the compaction the candidates planned over this view is it.
  const out =
    run.view === run.h && run.compacted
      ? run.compacted.result
      : await compactStrategy.run(run.view, fitCompactOptions(run.o, run.target), run.ctx);
  if (!out.plan || out.reason) return { view: run.view, early: [] };
  const applied = applyPlan(run.view, out.plan, run.count);
  const early = out.plan.artifacts
    .filter((a) => a.store === 'server')
    .map((a) => ({ id: a.id, kind: a.kind, tool_name: a.tool_name, sha256: a.sha256, content: a.json }));
  return { view: viewOf(run.view, applied, run.occupancy), early };
}

/** The range the next call's summary would cover (`asNextCallSees`), and its entry if it was asked for before. */
interface NextRange {
  view: PreparedHistory;
  early: NewArtifact[];
  range: PreparedRange;
  known: PreparedEntry | undefined;
}
const nextRanges = new WeakMap<FitRun, Promise<NextRange | undefined>>();

/** `NextRange` of this run, worked out once. */
function nextRange(run: FitRun): Promise<NextRange | undefined> {
  let next = nextRanges.get(run);
  if (!next) {
    next = (async () => {
      const o = summarizeOptions(run.o);
      const { view, early } = await asNextCallSees(run);
      // One prepared summary per conversation at a time: one the history still holds is reported,
      // not started again (a splice covers a shorter range than needed as well: the rest stays verbatim).
      const held = preparedIn(view, o, run.ctx, run.ctx.prepared?.entries ?? [], ['started', 'running', 'ready']);
      const range = held?.entry ?? rollingRange(view, o, run.ctx);
      if (!range) return undefined;
      return { view, early, range, known: run.ctx.prepared?.entries.find((e) => e.id === range.id) };
    })();
    nextRanges.set(run, next);
  }
  return next;
}

/**
 * Whether a summary that pays now is to be prepared instead of made on the request path: the call
 * defers (`summary_being_prepared`, below `limit` only) and a later one splices it: a range never
 * asked for, or one still being made for the history as this call's compaction leaves it. One
 * ready is spliced at once; one that failed is made on the request path.
 */
export async function toPrepare(run: FitRun): Promise<boolean> {
  if (!preparing(run) || run.forced) return false;
  const next = await nextRange(run);
  return next !== undefined && (next.known === undefined || next.known.state === 'started' || next.known.state === 'running');
}

/**
 * Tokens the history grows by per call of the agent: what followed each of its last
 * `GROWTH_CALLS` assistant messages (the message, its tool calls' results, any user turn), on average.
 */
export function growthPerCall(h: PreparedHistory): number {
  let calls = 0;
  let tokens = 0;
  for (let i = h.items.length - 1; i >= h.head && calls < GROWTH_CALLS; i--) {
    tokens += h.counts[i] as number;
    if (h.items[i]?.role === 'assistant' && h.items[i - 1]?.role !== 'assistant') calls++;
  }
  return calls === 0 ? tokens : Math.ceil(tokens / calls);
}

/**
 * Whether the summary a later call will need is to be prepared now. The point where it is due:
 * under policy cost, where it pays (`summaryDueAt`); under policy tokens, the target. `prepare.at`
 * places the start at a fraction of that point or in tokens (of the output); by default it starts
 * `PREPARE_LEAD_CALLS` of the agent's calls before it, counted at the history's recent growth.
 */
function due(run: FitRun): boolean {
  const dueAt = run.o.policy === 'tokens' ? run.target : (run.summaryDueAt ?? run.target);
  // A summary that pays now is prepared now (the call defers: `toPrepare`), whatever `at` says.
  if (dueAt <= run.h.occupancy + 1) return true;
  const at = run.o.prepare?.at;
  if (at?.tokens !== undefined) return run.occupancy >= at.tokens;
  if (at?.fraction !== undefined) return run.occupancy >= Math.floor(at.fraction * dueAt);
  return run.h.occupancy >= dueAt - PREPARE_LEAD_CALLS * growthPerCall(run.h);
}

/**
 * After the stages: when no summary was written or spliced and a summary is soon due (`due`), the range a summary would cover in the
 * output (what the agent sends next, plus what it appends) is asked to be prepared off the
 * request path: `result.prepare`, its `/v1/summarize` body covering exactly that range. A spliced
 * summary is reported as `prepared` with state `spliced`.
 */
export async function withPrepare(run: FitRun, result: StrategyResult<FitExtra>): Promise<StrategyResult<FitExtra>> {
  if (!preparing(run)) return result;
  const spliced = run.spliced;
  if (spliced) {
    const prepared = { id: spliced.id, state: 'spliced' as const, covers: { from: spliced.from, to: spliced.to } };
    const extra = result.extra;
    return { ...result, spliced: spliced.id, extra: (applied) => ({ ...extra(applied), prepared }) };
  }
  if (run.summarized.result?.plan || result.reason === 'dry_run' || !due(run)) return result;
  const next = await nextRange(run);
  if (!next) return result;
  const { view, early, range, known } = next;
  const prepared = { id: range.id, state: known?.state ?? ('started' as const), covers: { from: range.from, to: range.to } };
  if (known) return { ...result, extra: (applied) => ({ ...result.extra(applied), prepared }) };
  const body = {
    messages: view.messages,
    format: run.h.format.name,
    ...run.o.summarize,
    mode: 'rolling',
    keep: { messages: view.messages.length - range.to },
    on_failure: 'error',
  };
  const extra = result.extra;
  return {
    ...result,
    prepare: { ...range, body },
    // The originals the next call's compaction will offload, stored now: the summary's trail reads them.
    bestEffort: [...(result.bestEffort ?? []), ...early],
    extra: (applied) => ({ ...extra(applied), prepared }),
  };
}
