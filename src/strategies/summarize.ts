import { z } from 'zod';
import { CompactorError, fieldError } from '../errors.js';
import { parseSummary, SUMMARY_REQUEST, type SummaryPlacement, summaryMarker } from '../history/markers.js';
import type { Action, Item, Warning } from '../history/types.js';
import type { NewArtifact } from '../store/types.js';
import type { FactReport } from '../summarizers/facts.js';
import type { SummaryPlan, SummaryUsage } from '../summarizers/types.js';
import type { ArtifactRef } from './compact.js';
import { KeepSchema, requestedCut, safeCut, windowStrategy } from './sliding-window.js';
import { runSections } from './summarize-sections.js';
import { allowedModel, billed, cachedSummary, rangeArtifact, summaryKey, summaryRequest } from './summary-range.js';
import type { BilledUsage, PreparedHistory, Strategy, StrategyContext, StrategyOutput } from './types.js';

export const SummarizeOptions = z.strictObject({
  mode: z
    .enum(['rolling', 'sections'])
    .default('rolling')
    .describe('rolling: head + one summary + kept tail; sections: per-section summaries, last-section rotation, QA merge'),
  keep: KeepSchema.default({ messages: 20 }),
  keep_first_user: z.boolean().default(true).describe('keep the first user message (the original task)'),
  summary_role: z
    .enum(['user', 'system', 'pair'])
    .default('user')
    .describe(
      'user; system (formats that accept a system message inside the history); pair (a user request and an assistant answer)',
    ),
  summarizer: z
    .strictObject({
      model: z
        .string()
        .min(1)
        .max(256)
        .optional()
        .describe('the default model or one in COMPACTOR_SUMMARIZER_MODELS; with no LLM configured, none is allowed (400)'),
      prompt: z.string().max(20_000).optional().describe('extra instructions appended to the versioned prompt'),
      max_tokens: z.number().int().min(64).max(32_000).default(1024).describe("the summary's budget"),
      temperature: z.number().min(0).max(2).optional(),
    })
    .default({ max_tokens: 1024 }),
  max_input_tokens: z
    .number()
    .int()
    .min(1024)
    .default(32_000)
    .describe("one summarizer call's input budget: a longer range is summarized in chunks, then merged"),
  on_failure: z
    .enum(['keep', 'window', 'error'])
    .default('keep')
    .describe(
      'keep: history unchanged; window: fall back to the sliding window; error: 502/503/504 (a model not allowed is a 400 in every case)',
    ),
  timeout_ms: z.number().int().min(100).max(600_000).optional().describe('deadline for the whole request'),
  store: z
    .enum(['server', 'inline', 'none'])
    .default('server')
    .describe(
      'server: the summarized range is offloaded as an artifact the summary names; inline: returned in `artifacts[].content`, nothing stored; none: nothing kept',
    ),
  keep_sections: z.number().int().min(1).default(1).describe('sections mode: newest sections kept whole'),
  max_pair_tokens: z.number().int().min(64).default(4096).describe('sections mode: a kept pair over this is summarized alone'),
  max_section_tokens: z
    .number()
    .int()
    .min(256)
    .default(12_800)
    .describe('sections mode: a kept section over this has its oldest pairs summarized'),
  qa: z
    .strictObject({
      enabled: z.boolean().default(true),
      max_sections: z.number().int().min(2).default(10),
      max_tokens: z.number().int().min(256).default(16_384),
    })
    .default({ enabled: true, max_sections: 10, max_tokens: 16_384 })
    .describe('sections mode: past these, the older sections merge into one'),
  summarize_user_messages: z
    .boolean()
    .default(false)
    .describe('sections mode: the QA-merged header summarizes (true) or joins (false) the user messages of the merged sections'),
});

export type SummarizeOptions = z.output<typeof SummarizeOptions>;

export interface SummaryReport {
  id: string;
  parent_id: string | null;
  text: string;
  role: string;
  message_index: number;
  covered_messages: number;
  last_summarized_run_id: string | null;
  summarizer: 'llm' | 'extractive';
  model: string | null;
  cached: boolean;
  facts: FactReport;
}

export interface SummarizeExtra {
  summary: SummaryReport | null;
  /** The summarized ranges offloaded (with `store: inline`, their contents): when a summary was committed. */
  artifacts?: ArtifactRef[];
  plan?: SummaryPlan;
  dropped?: unknown;
}

interface Earlier {
  /** Messages the earlier summary occupies (own or pair), or the message it joined. */
  start: number;
  end: number;
  marker: NonNullable<ReturnType<typeof parseSummary>>;
  /** For a joined summary: the host message as it was before the summary joined it. */
  host?: unknown;
}

/**
 * Finds an earlier summary of ours right after the prefix (or joined to its last message). Only
 * messages that exist are read: the prefix may be the whole history (nothing but system messages),
 * and a summary request may be its last message, with no answer after it.
 */
function findEarlier(h: PreparedHistory, prefixEnd: number): Earlier | undefined {
  const { format, messages } = h;
  const last = prefixEnd - 1;
  const prose = (i: number) => (i < messages.length ? format.prose(messages[i]) : undefined);
  if (last >= 0) {
    const joined = parseSummary(format.lastText(messages[last]));
    if (joined && (joined.placement === 'joined' || joined.placement === 'joined-string')) {
      return {
        start: last,
        end: last,
        marker: joined,
        host: format.dropLastText(messages[last], joined.placement === 'joined-string'),
      };
    }
  }
  const own = parseSummary(prose(prefixEnd));
  if (own?.placement === 'own') return { start: prefixEnd, end: prefixEnd + 1, marker: own };
  if (prose(prefixEnd) === SUMMARY_REQUEST) {
    const pair = parseSummary(prose(prefixEnd + 1));
    if (pair?.placement === 'pair') return { start: prefixEnd, end: prefixEnd + 2, marker: pair };
  }
  return undefined;
}

const roleItem = (role: Item['role']): Item => ({
  index: -1,
  role,
  userTurn: role === 'user',
  calls: [],
  results: [],
  thinking: false,
  original: null,
});

/**
 * Rolling summary (Manning 6.2.5; hastekit's LLM summarizer; sagents): keeps the head, the first
 * user message and the tail (`keep`, moved back to a safe boundary, never forward), and replaces
 * the range between them with one summary. An earlier summary of ours found there is the starting
 * point (folded, never summarized as conversation, never duplicated). The range is offloaded as an
 * artifact the summary names, so `expand` gives the full transcript back. Identical requests are
 * served from a content-addressed cache; an empty or failed summary is never committed.
 */
async function run(h: PreparedHistory, o: SummarizeOptions, ctx: StrategyContext): Promise<StrategyOutput<SummarizeExtra>> {
  if (o.mode !== 'sections') return rolling(h, o, ctx);
  try {
    return await runSections(h, o, ctx);
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return onFailure(h, o, ctx, error, [], o.summarizer.model ?? null);
  }
}

/** Follows `on_failure` after a failed summary: unchanged, the sliding window, or the error itself. */
async function onFailure(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: StrategyContext,
  error: CompactorError,
  warnings: Warning[],
  model: string | null,
): Promise<StrategyOutput<SummarizeExtra>> {
  const spent = (error as CompactorError & { billed?: SummaryUsage }).billed ?? {
    input_tokens: 0,
    output_tokens: 0,
    cached_input_tokens: 0,
    calls: 0,
  };
  const cost = billed(spent, model);
  // Summaries paid for before the failure (sections mode), cached all the same.
  const bestEffort = (error as CompactorError & { bestEffort?: NewArtifact[] }).bestEffort ?? [];
  // A request the summarizer refused as invalid (a model not allowed) is bad input, never a fallback.
  if (o.on_failure === 'error' || error.status < 500) throw error;
  warnings.push({ code: 'summarizer_failed', message: `${error.code}: ${error.message}` });
  if (o.on_failure === 'keep') {
    return {
      messages: [...h.messages],
      actions: [],
      warnings,
      reason: 'summarizer_failed',
      failure: error.code,
      addedTokens: 0,
      usage: cost,
      bestEffort,
      extra: { summary: null },
    };
  }
  const fallback = (await windowStrategy.run(
    h,
    { keep: o.keep, keep_first_user: o.keep_first_user },
    ctx,
  )) as unknown as StrategyOutput<SummarizeExtra>;
  return {
    ...fallback,
    warnings: [...warnings, ...fallback.warnings],
    usage: cost,
    bestEffort,
    fallback: { from: 'summarize', to: 'window', reason: error.code },
    extra: { summary: null, dropped: (fallback.extra as unknown as { dropped: unknown }).dropped },
  };
}

async function rolling(h: PreparedHistory, o: SummarizeOptions, ctx: StrategyContext): Promise<StrategyOutput<SummarizeExtra>> {
  const { format, items, messages, counts } = h;
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
  const none = (reason: string, extra: Partial<SummarizeExtra> = {}, usage?: BilledUsage): StrategyOutput<SummarizeExtra> => ({
    messages: [...messages],
    actions: [],
    warnings,
    reason,
    addedTokens: 0,
    ...(usage ? { usage } : {}),
    extra: { summary: null, ...extra },
  });

  // 1. Prefix (head and first user message) and the tail's start, at a safe boundary.
  const firstUser = o.keep_first_user ? h.firstUser : -1;
  const requested = requestedCut(h, o.keep, firstUser);
  let cut = safeCut(h, requested);
  const keepFirst = firstUser >= h.head && firstUser < cut;
  const prefixEnd = keepFirst ? firstUser + 1 : h.head;
  const earlier = findEarlier(h, prefixEnd);
  const rangeStart = earlier && earlier.end > earlier.start ? earlier.end : prefixEnd;

  // 2. Where the summary goes, and a tail start that the format accepts after it.
  const hostIndex = prefixEnd - 1;
  const left = hostIndex >= 0 ? items[hostIndex] : undefined;
  const summaryRole = o.summary_role === 'system' ? 'system' : 'user';
  let placement: SummaryPlacement = o.summary_role === 'pair' ? 'pair' : 'own';
  // A summary that would follow a message of its own role where roles must alternate joins it.
  if (!format.canFollow(left, roleItem(placement === 'pair' ? 'user' : summaryRole))) {
    const host = earlier?.host ?? messages[hostIndex];
    placement = typeof (host as { content?: unknown })?.content === 'string' ? 'joined-string' : 'joined';
  }
  const lastRole: Item['role'] = placement === 'pair' ? 'assistant' : placement === 'own' ? summaryRole : (left?.role ?? 'user');
  while (cut > rangeStart && cut < items.length && !format.canFollow(roleItem(lastRole), items[cut] as Item)) {
    cut = (h.groups[(h.groupOf[cut] as number) - 1] as { start: number }).start;
  }
  if (cut < requested) {
    warnings.push({
      code: 'unsafe_cut_avoided',
      message: `the kept tail starts at message ${cut}, not ${requested}: a cut there is not safe`,
    });
  }
  const range: number[] = [];
  const opaque: number[] = [];
  for (let i = rangeStart; i < cut; i++) ((items[i] as Item).opaque ? opaque : range).push(i);
  if (range.length === 0) return none('nothing_to_reduce');

  // 3. What to summarize: the range as transcript entries, the earlier summary, the exact facts.
  const previous = earlier?.marker.text ?? null;
  const ranged = rangeArtifact('summary_range', h, range, earlier?.marker.id ?? null, o.store, ctx.address);
  // The range is hashed once: its address names the range artifact and, with the earlier summary,
  // keys the summary cache (with the model checked against the allowed list: a 400 even when cached).
  const cache = summaryKey('rolling', summarizer, o, JSON.stringify([previous, ranged.sha256]), ctx.address);
  // The transcript and its facts are built only when a summarizer will read them (not on a cache hit).
  const request = (signal?: AbortSignal) => summaryRequest(h, range, previous, o, signal);
  if (ctx.dryRun) return none('dry_run', { plan: summarizer.plan(request()) });

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

  // 5. The summarized range is offloaded; the summary names it.
  const { id, offload, refs: artifacts } = ranged;
  const covers = range.length + (earlier?.marker.covers ?? 0);
  const body = `${summaryMarker(id, placement, covers)}${text}`;

  // 6. The new history: prefix, opaque items kept, the summary, the tail.
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

  const freed = actions.reduce((sum, a) => sum + a.tokens_freed, 0);
  if (freed - added <= 0) {
    warnings.push({
      code: 'summary_not_smaller',
      message: `the summary (${added} tokens) would not be smaller than what it replaces (${freed})`,
    });
    // Not committed, but cached: the same request again costs nothing.
    return { ...none('summary_not_smaller', {}, billed(usage, model)), bestEffort };
  }
  const summary: SummaryReport = {
    id: id ?? cache.id,
    parent_id: earlier?.marker.id ?? null,
    text,
    role: placement === 'pair' ? 'pair' : placement === 'own' ? summaryRole : `${left?.role ?? 'user'} (joined)`,
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

export const summarizeStrategy: Strategy<typeof SummarizeOptions, SummarizeExtra> = {
  kind: 'summarize',
  options: SummarizeOptions,
  idle: () => ({ summary: null }),
  // A model that is not allowed is a 400 in every mode and case: below the trigger, with nothing
  // to summarize, in dry runs, whatever on_failure says.
  check: (o, env) => void allowedModel(env.summarizer, o.summarizer.model),
  run,
};
