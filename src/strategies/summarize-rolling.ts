import { CompactorError, fieldError } from '../errors.js';
import type { Action, Warning } from '../history/types.js';
import { SUMMARY_REQUEST, summaryMarker } from '../history/vocabulary.js';
import type { NewArtifact } from '../store/types.js';
import type { SummaryPlan } from '../summarizers/types.js';
import type { SummarizeExtra, SummarizeOptions, SummaryReport } from './summarize.js';
import { dryRunOutput } from './summarize-dry.js';
import { onFailure } from './summarize-failure.js';
import { planRolling, type RollingPlan } from './summarize-rolling-plan.js';
import { billed, cachedSummary, rangeArtifact, summaryKey, summaryRequest } from './summary-range.js';
import type { BilledUsage, PreparedHistory, StrategyContext, StrategyOutput } from './types.js';

/** The history with the summary `body` in place, each input message's action, and the tokens the summary adds. */
function assemble(
  h: PreparedHistory,
  ctx: StrategyContext,
  p: RollingPlan,
  body: string,
): { out: unknown[]; actions: Action[]; added: number; messageIndex: number } {
  const { format, messages, counts } = h;
  const { prefixEnd, hostIndex, earlier, placement, summaryRole, cut, range, opaque } = p;
  const actions: Action[] = messages.map((_, index) => ({ index, action: 'keep', tokens_freed: 0 }));
  const count = (m: unknown) => ctx.counter.countMessage(format, ctx.profile, m);
  const out: unknown[] = messages.slice(0, prefixEnd);
  let added = 0;
  let messageIndex: number;
  if (placement === 'joined' || placement === 'joined-string') {
    const host = earlier?.host ?? messages[hostIndex];
    const joined = format.appendText(host, body);
    out[hostIndex] = joined;
    const hostAction = actions[hostIndex] as Action;
    hostAction.action = 'rewrite';
    hostAction.tokens_freed = (counts[hostIndex] as number) - count(host);
    added += count(joined) - count(host);
    messageIndex = hostIndex;
  } else {
    if (earlier?.host !== undefined) {
      // An earlier summary joined the host: the host goes back to what it was before.
      out[hostIndex] = earlier.host;
      Object.assign(actions[hostIndex] as Action, {
        action: 'rewrite',
        tokens_freed: (counts[hostIndex] as number) - count(earlier.host),
      });
    }
    for (const i of opaque) out.push(messages[i]);
    if (earlier?.host === undefined && earlier) {
      for (let i = earlier.start; i < earlier.end; i++)
        Object.assign(actions[i] as Action, { action: 'summarize', tokens_freed: counts[i] });
    }
    const inserted =
      placement === 'pair'
        ? [format.textMessage('user', SUMMARY_REQUEST), format.textMessage('assistant', body)]
        : [format.textMessage(summaryRole, body)];
    out.push(...inserted);
    for (const m of inserted) added += count(m);
    messageIndex = out.length - 1;
  }
  if (placement !== 'own' && placement !== 'pair') for (const i of opaque) out.push(messages[i]);
  for (const i of range) Object.assign(actions[i] as Action, { action: 'summarize', tokens_freed: counts[i] });
  for (let i = cut; i < messages.length; i++) out.push(messages[i]);
  return { out, actions, added, messageIndex };
}

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
  ranged: { id: string | null },
  plan: SummaryPlan,
  warnings: Warning[],
): StrategyOutput<SummarizeExtra> {
  const covers = p.range.length + (p.earlier?.marker.covers ?? 0);
  const { actions, added } = assemble(h, ctx, p, summaryMarker(ranged.id, p.placement, covers));
  const freed = actions.reduce((sum, a) => sum + a.tokens_freed, 0);
  if (freed - added <= 0) {
    warnings.push({
      code: 'summary_not_smaller',
      message: `even an empty summary (${added} tokens) would not be smaller than what it replaces (${freed})`,
    });
    return {
      messages: [...h.messages],
      actions: [],
      warnings,
      reason: 'summary_not_smaller',
      addedTokens: 0,
      extra: { summary: null },
    };
  }
  return dryRunOutput(h, { actions, framing: added, summaries: 1, budget: o.summarizer.max_tokens, plan }, warnings);
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
): Promise<StrategyOutput<SummarizeExtra>> {
  const { format, messages } = h;
  const summarizer = ctx.summarizer;
  if (!summarizer) throw new CompactorError('CMP_ERR_INTERNAL', 'no summarizer configured');
  if (o.summary_role === 'system' && !format.systemMessages) {
    throw fieldError(
      'CMP_ERR_OPTIONS_INVALID',
      'summary_role',
      `${format.name} takes no system message inside the history; use user or pair`,
    );
  }
  const warnings: Warning[] = [];
  const none = (reason: string, usage?: BilledUsage): StrategyOutput<SummarizeExtra> => ({
    messages: [...messages],
    actions: [],
    warnings,
    reason,
    addedTokens: 0,
    ...(usage ? { usage } : {}),
    extra: { summary: null },
  });

  // 1–2. The prefix, where the summary goes, and the tail's start, at a safe boundary.
  const p = planRolling(h, o, warnings);
  const { earlier, range, cut } = p;
  if (range.length === 0) return none('nothing_to_reduce');

  // 3. What to summarize: the range as transcript entries, the earlier summary, the exact facts.
  const previous = earlier?.marker.text ?? null;
  const ranged = rangeArtifact('summary_range', h, range, earlier?.marker.id ?? null, o.store, ctx.address);
  // The range is hashed once: its address names the range artifact and, with the earlier summary,
  // keys the summary cache (with the model checked against the allowed list: a 400 even when cached).
  const cache = summaryKey('rolling', summarizer, o, JSON.stringify([previous, ranged.sha256]), ctx.address);
  // The transcript and its facts are built only when a summarizer will read them (not on a cache hit).
  const request = (signal?: AbortSignal) => summaryRequest(h, range, previous, o, signal);
  if (ctx.dryRun) return dryRolling(h, o, ctx, p, ranged, summarizer.plan(request()), warnings);

  // 4. The summary: from the cache, or from the summarizer (following on_failure when it fails).
  let got: Awaited<ReturnType<typeof cachedSummary>>;
  try {
    got = await cachedSummary(ctx, summarizer, cache, o.timeout_ms, request);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return onFailure(h, o, ctx, error, warnings, o.summarizer.model ?? null);
  }
  const { text, facts: factReport, model, usage, cached } = got;
  const bestEffort: NewArtifact[] = got.entry ? [got.entry] : [];

  // 5–6. The summarized range is offloaded and the summary names it: prefix, opaque items kept,
  // the summary, the tail.
  const { id, offload, refs: artifacts } = ranged;
  const covers = range.length + (earlier?.marker.covers ?? 0);
  const { out, actions, added, messageIndex } = assemble(h, ctx, p, `${summaryMarker(id, p.placement, covers)}${text}`);

  const freed = actions.reduce((sum, a) => sum + a.tokens_freed, 0);
  if (freed - added <= 0) {
    warnings.push({
      code: 'summary_not_smaller',
      message: `the summary (${added} tokens) would not be smaller than what it replaces (${freed})`,
    });
    // Not committed, but cached: the same request again costs nothing.
    return { ...none('summary_not_smaller', billed(usage, model)), bestEffort };
  }
  const role = p.placement === 'pair' ? 'pair' : p.placement === 'own' ? p.summaryRole : `${p.left?.role ?? 'user'} (joined)`;
  const summary: SummaryReport = {
    id: id ?? cache.id,
    parent_id: earlier?.marker.id ?? null,
    text,
    role,
    message_index: messageIndex,
    covered_messages: covers,
    last_summarized_run_id: h.runIds?.[cut - 1] ?? null,
    summarizer: summarizer.kind,
    model,
    cached,
    facts: factReport,
  };
  return {
    messages: out,
    actions,
    warnings,
    addedTokens: added,
    offload,
    bestEffort,
    usage: billed(usage, model),
    extra: { summary, artifacts },
  };
}
