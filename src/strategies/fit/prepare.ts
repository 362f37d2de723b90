import { viewOf } from '../../history/plan/view.js';
import type { PreparedHistory } from '../../history/prepared.js';
import { compactStrategy } from '../compact.js';
import type { SummarizeOptions } from '../summarize/options.js';
import { type PreparedEntry, preparedIn, rollingRange } from '../summarize/prepared.js';
import { type FitContext, type FitRequest, type Measured, measured, type NextRange } from './context.js';
import type { Spliceable } from './decide.js';
import { fitCompactOptions, summarizeOptions } from './options.js';
import type { Pipeline } from './pipeline.js';
import type { FitResult } from './result.js';
import { STANDIN_WARNING } from './standin.js';

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
/** The margin, in calls at the recent growth, added to `PREPARE_LEAD_CALLS` (a call larger than the recent ones). */
export const PREPARE_MARGIN_CALLS = 1;
/** The agent's recent calls whose growth is averaged (`growthPerCall`). */
const GROWTH_CALLS = 4;

/**
 * Whether `entry` was spliced by an earlier call into a shorter history than `h`, which still holds
 * its range: the client keeps its whole history and sends it again, adopting no answer (an agent
 * that adopts one never sends a spliced range again). Known where the preparer records where it
 * was spliced (the embedded one; with Redis, never).
 */
export function resent(entry: PreparedEntry, h: PreparedHistory): boolean {
  return entry.state === 'spliced' && entry.splicedAt !== undefined && h.messages.length > entry.splicedAt;
}

/**
 * A summary the caller is already preparing for this conversation, its range still held
 * byte-identical by `view`: while it is made, fit neither starts another nor makes its own.
 */
export function beingPrepared(r: FitRequest, view: PreparedHistory): PreparedEntry | undefined {
  if (!r.preparing) return undefined;
  return preparedIn(view, summarizeOptions(r.o), r.ctx, r.ctx.prepared?.entries ?? [], ['started', 'running'])?.entry;
}

/**
 * The prepared summary `view` can splice in: a ready one whose range it holds byte-identical at
 * the same place; else, when waiting is allowed (`wait_ms`, by default only above `limit`), one
 * still being made, once it is ready in time. Undefined: summarize as without preparing.
 */
export async function spliceable(r: FitRequest, view: PreparedHistory, o: SummarizeOptions, wait: boolean) {
  if (!r.preparing) return undefined;
  const { ctx } = r;
  const entries = ctx.prepared?.entries ?? [];
  const ready = preparedIn(view, o, ctx, entries, ['ready', 'spliced']);
  if (ready || !wait) return ready;
  const waitMs = r.o.prepare?.wait_ms ?? (r.forced ? PREPARE_WAIT_ABOVE_LIMIT_MS : 0);
  if (waitMs <= 0) return undefined;
  const making: Spliceable | undefined = preparedIn(view, o, ctx, entries, ['started', 'running']);
  const settled = ctx.prepared?.settled;
  return making && settled && (await settled(making.entry.id, waitMs, ctx.signal)) ? making : undefined;
}

/**
 * The range the next call's summary would cover, in `out` as that call will see it: under policy
 * cost after its compaction (deterministic: a range prepared now is still byte-identical then;
 * `compaction`, the one already planned over `out`), under policy tokens as it is. One prepared
 * summary per conversation at a time: one the history still holds is reported, not started again.
 */
export async function nextRange(r: FitRequest, out: Output, compaction?: Measured<unknown>): Promise<NextRange | undefined> {
  const o = summarizeOptions(r.o);
  const seen = r.policy === 'tokens' ? { view: out.view, early: [] } : await compacted(r, out, compaction);
  // One spliced for a client that keeps its whole history (`resent`) is held too: it is spliced
  // again, not prepared anew (the next one is asked for by `afterSplice`).
  const entries = (r.ctx.prepared?.entries ?? []).filter((e) => e.state !== 'spliced' || resent(e, r.h));
  const held = preparedIn(seen.view, o, r.ctx, entries, ['started', 'running', 'ready', 'spliced']);
  const range = held?.entry ?? rollingRange(seen.view, o, r.ctx);
  if (!range) return undefined;
  return { ...seen, range, known: r.ctx.prepared?.entries.find((e) => e.id === range.id) };
}

/** The history a run leaves, and its occupancy. */
type Output = Pick<Pipeline, 'view' | 'occupancy'>;

/**
 * `out` after the compaction stage, and the originals it offloads to the server. The view is the
 * one `measure` made of the same compaction (`viewOf` finds it by the occupancy it leaves): the
 * messages are not parsed again.
 */
async function compacted(r: FitRequest, { view, occupancy }: Output, compaction?: Measured<unknown>) {
  const m = compaction ?? measured(r, view, await compactStrategy.run(view, fitCompactOptions(r.o, r.target), r.ctx));
  const out = m.result;
  if (!out.plan || out.reason || !m.applied) return { view, early: [] };
  const applied = m.applied;
  const early = out.plan.artifacts
    .filter((a) => a.store === 'server')
    .map((a) => ({
      id: a.id,
      kind: a.kind,
      tool_name: a.tool_name,
      sha256: a.sha256,
      // Read only if written: an original stored a moment ago is not stringified again.
      get content() {
        return a.json;
      },
    }));
  return { view: viewOf(view, applied, occupancy - m.freed), early };
}

/**
 * Tokens the history grows by per call of the agent: what followed each of its last
 * `GROWTH_CALLS` assistant messages (the message, its tool calls' results, any user turn), on
 * average, or the newest call's growth when it is larger (large tool outputs come in runs).
 */
export function growthPerCall(h: PreparedHistory): number {
  let calls = 0;
  let tokens = 0;
  let newest = 0;
  for (let i = h.items.length - 1; i >= h.head && calls < GROWTH_CALLS; i--) {
    tokens += h.counts[i] as number;
    if (h.items[i]?.role === 'assistant' && h.items[i - 1]?.role !== 'assistant') {
      calls++;
      if (calls === 1) newest = tokens;
    }
  }
  return calls === 0 ? tokens : Math.max(newest, Math.ceil(tokens / calls));
}

/**
 * The headroom under the point where a summary is due at which preparing it starts, by default:
 * the history's growth per call (`growthPerCall`) times the calls a summary takes to be ready
 * (`PREPARE_LEAD_CALLS`) and a margin of `PREPARE_MARGIN_CALLS` more, so that in a session growing
 * at a steady rate it is ready before it is due.
 */
export function prepareHeadroom(h: PreparedHistory): number {
  return (PREPARE_LEAD_CALLS + PREPARE_MARGIN_CALLS) * growthPerCall(h);
}

/**
 * Whether the summary a later call will need is to be prepared now: at `prepare.at` (a fraction of
 * the point where it is due, `summaryDueAt` or the target under policy tokens, or tokens of the
 * output), by default once the headroom left under that point is under `prepareHeadroom`.
 */
function due(c: FitContext, acc: Pipeline): boolean {
  const dueAt = c.policy === 'tokens' ? c.target : (c.summaryDueAt ?? c.target);
  // A summary that pays now is prepared now (the call defers: `decide`), whatever `at` says.
  if (dueAt <= c.h.occupancy + 1) return true;
  const at = c.o.prepare?.at;
  if (at?.tokens !== undefined) return acc.occupancy >= at.tokens;
  if (at?.fraction !== undefined) return acc.occupancy >= Math.floor(at.fraction * dueAt);
  return dueAt - c.h.occupancy < prepareHeadroom(c.h);
}

/**
 * After the stages: no summary written or spliced and one soon due, the range it would cover in the
 * output is asked for off the request path (`prepare`: its `/v1/summarize` body); a splice is
 * reported (with the length of the history it went into), and after one for a client that keeps
 * its whole history, the next summary is asked for when the reduced history nears the target
 * (`afterSplice`).
 */
export async function withPrepare(c: FitContext, acc: Pipeline, result: FitResult): Promise<FitResult> {
  if (!c.preparing) return result;
  const { spliced } = acc;
  const extra = result.extra;
  if (spliced) {
    const prepared = { id: spliced.id, state: 'spliced' as const, covers: { from: spliced.from, to: spliced.to } };
    const reported: FitResult = {
      ...result,
      spliced: spliced.id,
      splicedAt: c.h.messages.length,
      extra: (applied, billed) => ({ ...extra(applied, billed), prepared }),
    };
    const next = await afterSplice(c, acc, spliced);
    return next ? asked(c, reported, next) : reported;
  }
  // A stand-in (`summarizer_wait: never`) is folded by the next summary: that one is prepared now.
  const standin = acc.warnings.some((w) => w.code === STANDIN_WARNING);
  if ((acc.summarized.result?.plan && !standin) || !due(c, acc)) return result;
  // Nothing taken: the output is the input, whose next range may have been worked out to decide.
  const untouched = acc.view === c.h;
  const next = (untouched && c.next) || (await nextRange(c, acc, untouched ? c.compaction : undefined));
  if (!next) return result;
  const prepared = {
    id: next.range.id,
    state: next.known?.state ?? ('started' as const),
    covers: { from: next.range.from, to: next.range.to },
  };
  const reported: FitResult = { ...result, extra: (applied, billed) => ({ ...extra(applied, billed), prepared }) };
  return next.known ? reported : asked(c, reported, next);
}

/**
 * For a client that keeps its whole history (`resent`: it sent again a range spliced into a
 * shorter history), the range of its next summary once the reduced history nears the target
 * (`prepare.at` of the target, by default within `prepareHeadroom` of it): the range a rolling
 * summary would cover now in the input as compaction leaves it, unless one as long is held or
 * known already. A client that adopts the answer never sends a spliced range again: its next
 * summary is asked for over the history it sends, as before.
 */
async function afterSplice(c: FitContext, acc: Pipeline, spliced: PreparedEntry): Promise<NextRange | undefined> {
  if (!resent(spliced, c.h)) return undefined;
  const at = c.o.prepare?.at;
  let near: boolean;
  if (at?.tokens !== undefined) near = acc.occupancy >= at.tokens;
  else if (at?.fraction !== undefined) near = acc.occupancy >= Math.floor(at.fraction * c.target);
  else near = c.target - acc.occupancy < prepareHeadroom(c.h);
  if (!near) return undefined;
  const seen = await compacted(c, { view: c.h, occupancy: c.h.occupancy }, c.compaction);
  const o = summarizeOptions(c.o);
  const entries = c.ctx.prepared?.entries ?? [];
  const longer = preparedIn(seen.view, o, c.ctx, entries, ['started', 'running', 'ready'])?.entry;
  if (longer && longer.to > spliced.to) return undefined;
  const range = rollingRange(seen.view, o, c.ctx);
  if (!range || range.to <= spliced.to || entries.some((e) => e.id === range.id)) return undefined;
  return { ...seen, range, known: undefined };
}

/** `result` asking for `next`'s summary off the request path: its `/v1/summarize` body, and the originals it reads stored now. */
function asked(c: FitContext, result: FitResult, next: NextRange): FitResult {
  const { view, early, range } = next;
  // Counted as this call counts (the caller's model and window): the job finds this call's token
  // counts of the range's messages, and this call's next one finds the count of the summary it writes.
  const model = c.ctx.cost.model;
  const window = c.ctx.profile.contextWindow;
  const body = {
    messages: view.messages,
    format: c.h.format.name,
    ...(model !== undefined ? { model } : {}),
    ...(window !== undefined ? { context_window: window } : {}),
    ...c.o.summarize,
    mode: 'rolling',
    keep: { messages: view.messages.length - range.to },
    on_failure: 'error',
  };
  return {
    ...result,
    prepare: { ...range, body },
    // The originals the next call's compaction will offload, stored now: the summary's trail reads them.
    bestEffort: [...(result.bestEffort ?? []), ...early],
  };
}
