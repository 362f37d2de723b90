import type { ReasonCode } from '../../contract/codes.js';
import { CompactorError, fieldError } from '../../errors.js';
import { applyPlan } from '../../history/plan/apply.js';
import type { Edit, Entry, Insert, OriginalSpec, Plan, Removal } from '../../history/plan/types.js';
import type { Warning } from '../../history/types.js';
import { SUMMARY_REQUEST } from '../../history/vocabulary.js';
import type { NewArtifact } from '../../store/types.js';
import type { SummaryPlan } from '../../summarizers/types.js';
import { type BilledUsage, countWith, type PreparedHistory, type StrategyContext, type StrategyResult } from '../types.js';
import { billed, cachedSummary, summaryKey } from './cache.js';
import { dryRunResult } from './dry.js';
import { onFailure } from './failure.js';
import type { SummarizeExtra, SummarizeOptions, SummaryReport } from './options.js';
import { plannedSummary } from './plan-memo.js';
import { type RangeArtifact, rangeArtifact, rangeOriginals, summaryRequest } from './range.js';
import { planRolling, type RollingPlan } from './rolling-plan.js';

/**
 * The plan of a rolling summary: the prefix, the summary (its own message or pair, or joined to
 * the prefix's last message), the opaque items of the range kept, the tail. The range and an
 * earlier summary's own messages are removed as summarized; a host an earlier summary joined is
 * given back (the summary moves out of it) or joined again.
 */
function summaryPlan(h: PreparedHistory, p: RollingPlan, body: string, artifacts: OriginalSpec[]): Plan {
  const { prefixEnd, hostIndex, earlier, placement, summaryRole, cut, range, opaque } = p;
  const entries: Entry[] = [];
  const removed = new Map<number, Removal>();
  const joined = placement === 'joined' || placement === 'joined-string';
  // A host an earlier summary joined goes back to what it was before that summary.
  const restore: Edit[] =
    earlier?.host !== undefined ? [{ op: 'drop-last-text', collapse: earlier.marker.placement === 'joined-string' }] : [];
  for (let i = 0; i < prefixEnd; i++) {
    if (i !== hostIndex) entries.push({ index: i, edits: [] });
    else if (joined) entries.push({ index: i, edits: [...restore, { op: 'append-text', text: body }], key: SUMMARY_KEY });
    else entries.push({ index: i, edits: restore });
  }
  if (!joined) {
    for (const i of opaque) entries.push({ index: i, edits: [] });
    if (earlier && earlier.host === undefined)
      for (let i = earlier.start; i < earlier.end; i++) removed.set(i, { action: 'summarize' });
    const insert: Insert[] =
      placement === 'pair'
        ? [
            { kind: 'text', role: 'user', text: SUMMARY_REQUEST },
            { kind: 'text', role: 'assistant', text: body },
          ]
        : [{ kind: 'text', role: summaryRole, text: body }];
    entries.push({ insert, key: SUMMARY_KEY });
  } else for (const i of opaque) entries.push({ index: i, edits: [] });
  for (const i of range) removed.set(i, { action: 'summarize' });
  for (let i = cut; i < h.messages.length; i++) entries.push({ index: i, edits: [] });
  return { entries, removed, artifacts };
}

/** The key of the entry that holds the summary: its output position is `summary.message_index`. */
const SUMMARY_KEY = 'summary';

/**
 * A dry run of the rolling summary: everything the real run would do but write the summary. The
 * actions are exact (the range is known before the summary is written); the summary's size is
 * estimated (`dryRunOutput`). A range so small that even an empty summary would not pay is
 * `summary_not_smaller`, as the real run would answer.
 */
function dryRolling(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: StrategyContext,
  p: RollingPlan,
  ranged: RangeArtifact,
  plan: SummaryPlan,
  warnings: Warning[],
): StrategyResult<SummarizeExtra> {
  const covers = p.range.length + (p.earlier?.marker.covers ?? 0);
  // The range a real run would offload is not listed: a dry run offloads nothing.
  const dry = summaryPlan(h, p, ctx.markers.summary(ranged.id, p.placement, covers, ''), []);
  const { freed, added } = applyPlan(h, dry, countWith(h, ctx));
  if (freed - added <= 0) {
    warnings.push({
      code: 'summary_not_smaller',
      message: `even an empty summary (${added} tokens) would not be smaller than what it replaces (${freed})`,
    });
    return { warnings, reason: 'summary_not_smaller', extra: () => ({ summary: null }) };
  }
  return dryRunResult(dry, { summaries: 1, budget: o.summarizer.max_tokens, plan }, warnings);
}

/** A response without a summary (nothing committed), with what was billed if anything. */
function noSummary(warnings: Warning[], reason: ReasonCode, usage?: BilledUsage): StrategyResult<SummarizeExtra> {
  return { warnings, reason, ...(usage ? { usage } : {}), extra: () => ({ summary: null }) };
}

type Written = Awaited<ReturnType<typeof cachedSummary>>;

/**
 * Steps 5–6: the summary written, put in place. The summarized range is offloaded and the summary
 * names it: prefix, opaque items kept, the summary, the tail. A summary not smaller than what it
 * replaces is not committed (but stays cached: the same request again costs nothing).
 */
function commit(
  h: PreparedHistory,
  ctx: StrategyContext,
  p: RollingPlan,
  ranged: RangeArtifact,
  cacheId: string,
  got: Written,
  warnings: Warning[],
): StrategyResult<SummarizeExtra> {
  const { text, facts, model, usage, cached } = got;
  const bestEffort: NewArtifact[] = got.entry ? [got.entry] : [];
  const { earlier, range, cut } = p;
  const covers = range.length + (earlier?.marker.covers ?? 0);
  const plan = summaryPlan(h, p, ctx.markers.summary(ranged.id, p.placement, covers, text), ranged.specs);
  const { freed, added } = applyPlan(h, plan, countWith(h, ctx));
  if (freed - added <= 0) {
    warnings.push({
      code: 'summary_not_smaller',
      message: `the summary (${added} tokens) would not be smaller than what it replaces (${freed})`,
    });
    return { ...noSummary(warnings, 'summary_not_smaller', billed(usage, model)), bestEffort };
  }
  const role =
    p.placement === 'pair' ? 'pair' : p.placement === 'own' ? p.summaryRole : `${h.items[p.hostIndex]?.role ?? 'user'} (joined)`;
  const rest: Omit<SummaryReport, 'id' | 'parent_id' | 'text' | 'role' | 'message_index'> = {
    covered_messages: covers,
    last_summarized_run_id: h.runIds?.[cut - 1] ?? null,
    summarizer: (ctx.summarizer as NonNullable<StrategyContext['summarizer']>).kind,
    model,
    cached,
    facts,
  };
  const head = { id: ranged.id ?? cacheId, parent_id: earlier?.marker.id ?? null, text, role };
  return {
    plan,
    warnings,
    bestEffort,
    usage: billed(usage, model),
    // The response's field order: where the summary sits comes after its role.
    extra: (applied) => ({
      summary: { ...head, message_index: applied?.positions.get(SUMMARY_KEY) ?? -1, ...rest },
      artifacts: applied?.artifacts ?? [],
    }),
  };
}

/**
 * Rolling summary (Manning 6.2.5; hastekit's LLM summarizer; sagents): keeps the head, the first
 * user message and the tail (`keep`, moved back to a safe boundary, never forward), and replaces
 * the range between them with one summary. An earlier summary of ours found there is the starting
 * point (folded, never summarized as conversation, never duplicated). The range is offloaded as an
 * artifact the summary names, so `expand` gives the full transcript back. Identical requests are
 * served from a content-addressed cache; an empty or failed summary is never committed. A dry run
 * reports the actions without asking for the summary (`dryRolling`).
 */
export async function rolling(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: StrategyContext,
): Promise<StrategyResult<SummarizeExtra>> {
  const summarizer = ctx.summarizer;
  if (!summarizer) throw new CompactorError('CMP_ERR_INTERNAL', 'no summarizer configured');
  if (o.summary_role === 'system' && !h.format.systemMessages) {
    throw fieldError(
      'CMP_ERR_OPTIONS_INVALID',
      'summary_role',
      `${h.format.name} takes no system message inside the history; use user or pair`,
    );
  }
  const warnings: Warning[] = [];

  // 1–2. The prefix, where the summary goes, and the tail's start, at a safe boundary.
  const p = planRolling(h, o, ctx.markers, warnings);
  const { earlier, range } = p;
  if (range.length === 0) return noSummary(warnings, 'nothing_to_reduce');

  // 3. What to summarize: the range as transcript entries, the earlier summary, the exact facts.
  const previous = earlier?.marker.text ?? null;
  const ranged = rangeArtifact('summary_range', h, range, earlier?.marker.id ?? null, o.store, ctx.address);
  // The range is hashed once: its address names the range artifact and, with the earlier summary,
  // keys the summary cache (with the model checked against the allowed list: a 400 even when cached).
  const cache = summaryKey('rolling', summarizer, o, JSON.stringify([previous, ranged.sha256]), ctx.address);
  // The transcript and its facts are built only when a summarizer will read them (not on a cache
  // hit); the trail reads what compaction offloaded from the range.
  const request = async (signal?: AbortSignal) =>
    summaryRequest(
      h,
      range,
      previous,
      o,
      signal,
      false,
      o.trail_tokens > 0 ? await rangeOriginals(h, range, ctx) : undefined,
      ranged.id,
    );
  // A dry run only plans the calls: their inputs are the range, not the facts or the trail.
  if (ctx.dryRun) return dryRolling(h, o, ctx, p, ranged, plannedSummary(summarizer, h, range, previous, o, ranged), warnings);

  // 4. The summary: from the cache, or from the summarizer (following on_failure when it fails).
  let got: Written;
  try {
    got = await cachedSummary(ctx, summarizer, cache, o.timeout_ms, request);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return onFailure(h, o, ctx, error, warnings, o.summarizer.model ?? null);
  }
  return commit(h, ctx, p, ranged, cache.id, got, warnings);
}
