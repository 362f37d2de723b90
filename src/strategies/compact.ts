import { z } from 'zod';
import type { ReasonCode } from '../contract/codes.js';
import { ArtifactRefSchema, CostSchema } from '../contract/parts.js';
import { breakEvenTokens, estimate, worthIt } from '../cost/estimate.js';
import type { CostReport } from '../cost/model.js';
import type { OriginalKind } from '../history/artifact-kinds.js';
import { type Bindings, bindings } from '../history/bindings.js';
import { placeholderMarker as marker } from '../history/markers.js';
import { applyPlan } from '../history/plan/apply.js';
import { Draft } from '../history/plan/draft.js';
import { evaluatePlan } from '../history/plan/evaluate.js';
import type { ArtifactRef } from '../history/plan/types.js';
import type { ActionKind, Warning } from '../history/types.js';
import { clearableArg } from '../history/vocabulary.js';
import { bodyTagOf, tagOf } from '../tokens/content-tag.js';
import { CompactOptions } from './compact-options.js';
import { keepOutcome, knownOutcome, outcomeSelector } from './compact-outcomes.js';
import { headAndTail, INPUT_PLACEHOLDER, placeholderFor, recallNote as recall, render } from './compact-rules.js';
import { newerCopy, type ResultSiteInfo, resultSites } from './compact-sites.js';
import { clearThinking } from './compact-thinking.js';
import { costAsked, modelFor, pricedResult } from './priced.js';
import { countWith, type PreparedHistory, type Strategy, type StrategyContext, type StrategyResult } from './types.js';

export type { ArtifactRef } from '../history/plan/types.js';
export { CompactOptions } from './compact-options.js';

type CompactExtra = { artifacts: ArtifactRef[]; cost?: CostReport };

function tokensOf(ctx: StrategyContext, text: string): number {
  return ctx.counter.countTextCached(ctx.profile, text);
}

/** One compaction in progress: its draft, the results it changed, their sizes, and whether it is done. */
class Compaction {
  readonly draft: Draft;
  /** Results already replaced (by a pointer, a placeholder or a truncation). */
  readonly done = new Set<ResultSiteInfo>();
  private readonly sizes = new Map<ResultSiteInfo, number>();

  constructor(
    readonly h: PreparedHistory,
    readonly o: CompactOptions,
    readonly ctx: StrategyContext,
  ) {
    this.draft = new Draft(h, countWith(h, ctx), ctx.address, o.store);
  }

  /** Whether occupancy is at or under `target_tokens` (never, without one). */
  readonly underTarget = (): boolean =>
    this.o.target_tokens !== undefined && this.h.occupancy - this.draft.freed <= this.o.target_tokens;

  sizeOf(s: ResultSiteInfo): number {
    let t = this.sizes.get(s);
    if (t === undefined) {
      // A result of a message that came in is found by the message's tag (its text not hashed again).
      const tag = tagOf(this.h.messages[s.index]);
      t = this.ctx.counter.countPartOfTag(this.ctx.profile, this.h.format, tag, s.slot, s.text);
      this.sizes.set(s, t);
    }
    return t;
  }

  /**
   * Replaces a result by `text` (its placeholder signed for this call), its original offloaded (or
   * cleared, with store none). In a message that came in tagged and is not edited yet, the signed
   * text and the edited message's tag are those of the same replacement on an earlier call
   * (`compact-outcomes.ts`), when there was one.
   */
  replace(s: ResultSiteInfo, kind: OriginalKind, text: (id: string | null, tokens: number) => string): void {
    const { draft: w, ctx } = this;
    const original = w.original(s.index, 'result', s.slot, { kind, tool: s.tool, tokens: this.sizeOf(s) });
    const action: ActionKind = kind === 'tool_result_truncated' ? 'truncate' : original.id ? 'offload' : 'clear';
    const unsigned = text(original.id, original.spec.tokens);
    const tag = w.untouched(s.index) ? bodyTagOf(this.h.messages[s.index]) : undefined;
    const selector =
      tag === undefined
        ? ''
        : outcomeSelector(ctx.markers.name, this.h.format.name, s.slot, s.binding, action, original.id, unsigned);
    const known = tag === undefined ? undefined : knownOutcome(tag, selector);
    const signed = known?.signed ?? ctx.markers.placeholder('result', s.binding, original.id, unsigned);
    if (!w.replaceResult(s.index, s.slot, signed, action, original, known?.tag)) return;
    this.done.add(s);
    if (tag === undefined || known !== undefined) return;
    const made = w.tagAt(s.index);
    if (made !== undefined) keepOutcome(tag, selector, { signed, tag: made });
  }

  /** Whether a result may still be replaced whole. */
  replaceable(s: ResultSiteInfo): boolean {
    return !s.protected && !this.done.has(s) && !this.underTarget() && this.sizeOf(s) >= this.o.min_tokens;
  }
}

/** Step 1: an older copy of a newer result becomes a pointer to the newest copy. */
function dedupe(c: Compaction, sites: readonly ResultSiteInfo[]): void {
  const byLength = new Map<number, ResultSiteInfo | Map<string, ResultSiteInfo>>();
  for (let i = sites.length - 1; i >= 0; i--) {
    const s = sites[i] as ResultSiteInfo;
    const newer = newerCopy(byLength, s);
    if (!newer) continue;
    if (!c.replaceable(s)) continue;
    c.replace(
      s,
      'tool_result_duplicate',
      (id, tokens) =>
        `${marker(id)} Identical to the output of the later call ${newer.callId} (${s.tool}). ${recall(c.ctx.markers.recallTool, id, tokens)}`,
    );
  }
}

/** Step 2: old results become placeholders, oldest first (those a rule keeps stay). */
function clearResults(c: Compaction, sites: readonly ResultSiteInfo[]): void {
  for (const s of sites) {
    if (s.kept || !c.replaceable(s)) continue;
    c.replace(s, 'tool_result', (id, tokens) => {
      const body = render(placeholderFor(s.tool, c.o.rules), { tool: s.tool, id, tokens, args: s.args });
      return `${marker(id)} ${body} ${recall(c.ctx.markers.recallTool, id, tokens)}`;
    });
  }
}

/** Step 4: old results that stayed but are over `limit` tokens keep only their head and tail. */
function truncateResults(c: Compaction, sites: readonly ResultSiteInfo[], limit: number): void {
  for (const s of sites) {
    if (s.protected || c.done.has(s) || c.underTarget() || c.sizeOf(s) <= limit) continue;
    c.replace(s, 'tool_result_truncated', (id, tokens) => {
      const { head, tail } = headAndTail(s.text, tokens, limit);
      const tool = c.ctx.markers.recallTool;
      const stored = tool ? `call the \`${tool}\` tool with ${id} for the full output` : `the full output is stored as ${id}`;
      const note = id ? stored : 'the full output was not kept';
      return `${head}\n\n${marker(id)} … ${tokens - limit} of ${tokens} tokens omitted; ${note} …\n\n${tail}`;
    });
  }
}

/**
 * Compaction (Manning 6.2.4; Anthropic's tool-result clearing; SWE-agent observation masking):
 * deterministic, reversible reduction of old tool traffic. In order, each step stopping once
 * occupancy is under `target_tokens`: identical older results become pointers to the newest copy,
 * old results are replaced by placeholders (oldest first), large arguments of old calls are
 * cleared, results that stay but are over `truncate_tokens` keep only their head and tail, and old
 * thinking is removed whole (the newest keep_turns assistant turns, the turn in progress and the
 * newest group keep theirs). Originals are offloaded as content-addressed artifacts. Results that
 * carry a placeholder of ours (its MAC verifies for their call) were compacted before and are left
 * alone, so running it on its own output changes nothing.
 */
function run(h: PreparedHistory, o: CompactOptions, ctx: StrategyContext): StrategyResult<CompactExtra> {
  const c = new Compaction(h, o, ctx);
  const w = c.draft;
  const warnings: Warning[] = [];
  const bound = bindings(h.format, h.messages);
  const sites = resultSites(h, o, ctx.markers, bound);
  if (o.dedupe) dedupe(c, sites);
  clearResults(c, sites);
  if (o.clear_tool_inputs) clearInputs(c, sites, bound);
  if (o.truncate_tokens !== undefined) truncateResults(c, sites, o.truncate_tokens);
  if (o.clear_thinking) warnings.push(...clearThinking(h, o.clear_thinking.keep_turns, w, c.underTarget));

  if (o.target_tokens !== undefined && !c.underTarget()) {
    warnings.push({
      code: 'target_not_met',
      message: `occupancy is ${h.occupancy - w.freed}, over the target ${o.target_tokens}: the remaining tool traffic is protected or small`,
    });
  }
  return finish(c, warnings);
}

/**
 * What compaction answers once its steps are done: nothing to reduce; nothing because the saving
 * is under `clear_at_least` (in tokens, or with "auto" by the cost rule: the saving over the
 * horizon must pay for the cached tokens it rewrites); or its plan. With pricing or usage given,
 * what it costs (`cost`).
 */
function finish(c: Compaction, warnings: Warning[]): StrategyResult<CompactExtra> {
  const { h, o, ctx, draft: w } = c;
  const auto = o.clear_at_least === 'auto';
  const model = auto || costAsked(o, ctx) ? modelFor(h, o, ctx) : undefined;
  const idle = (reason: ReasonCode, more: { break_even_tokens?: number } = {}): StrategyResult<CompactExtra> => ({
    warnings,
    reason,
    extra: () => ({ artifacts: [], ...(model ? { cost: pricedResult(model, o, undefined, more) } : {}) }),
  });
  if (!w.touched) return idle('nothing_to_reduce');
  const plan = w.plan();
  let more: { break_even_tokens?: number } = {};
  if (auto && model) {
    const e = estimate(model, evaluatePlan(plan, applyPlan(h, plan, countWith(h, ctx))), 0);
    more = { break_even_tokens: Math.max(breakEvenTokens(model, e.rewriteTokens), e.batch) };
    if (!worthIt(e, model)) {
      warnings.push({
        code: 'saving_below_clear_at_least',
        message: `compaction would free ${w.freed} tokens; rewriting ${e.rewriteTokens} cached tokens pays over ${model.horizon} calls from about ${more.break_even_tokens}: nothing was changed`,
      });
      return idle('below_clear_at_least', more);
    }
  } else if (typeof o.clear_at_least === 'number' && w.freed < o.clear_at_least) {
    warnings.push({
      code: 'saving_below_clear_at_least',
      message: `compaction would free ${w.freed} tokens, under clear_at_least ${o.clear_at_least}: nothing was changed`,
    });
    return idle('below_clear_at_least');
  }
  return {
    plan,
    warnings,
    extra: (applied) => ({
      artifacts: applied?.artifacts ?? [],
      ...(model && applied ? { cost: pricedResult(model, o, { plan, applied }, more) } : {}),
    }),
  };
}

/** Step 3: large arguments of old calls (write/edit tools' contents, any large `content`) are cleared. */
function clearInputs(c: Compaction, sites: readonly ResultSiteInfo[], bound: Bindings): void {
  const { h, o, ctx, draft: w } = c;
  const underTarget = c.underTarget;
  const protectedCalls = new Set(sites.filter((s) => s.protected || s.kept).map((s) => s.callId));
  h.items.forEach((item, index) => {
    if (item.calls.length === 0 || underTarget()) return;
    const group = h.groups[h.groupOf[index] as number];
    if (group && group === h.groups[h.groups.length - 1]) return;
    for (const call of h.format.callSites(h.messages[index])) {
      if (!call.args || protectedCalls.has(call.id) || o.exclude_tools.includes(call.name) || underTarget()) continue;
      if (ctx.markers.readPlaceholder('call', bound.call(index, call.slot) ?? '', JSON.stringify(call.args))) continue;
      const large = Object.entries(call.args).filter(
        ([key, value]) => clearableArg(call.name, key, value) && tokensOf(ctx, value as string) >= o.min_tokens,
      );
      if (large.length === 0) continue;
      const tokens = large.reduce((sum, [, v]) => sum + tokensOf(ctx, v as string), 0);
      const original = w.original(index, 'call', call.slot, { kind: 'tool_input', tool: call.name, tokens });
      const args = { ...call.args };
      for (const [key, value] of large) {
        const tokens = tokensOf(ctx, value as string);
        const tool = ctx.markers.recallTool;
        const where = tool ? `call the \`${tool}\` tool with ${original.id} to see them` : `stored as ${original.id}`;
        args[key] = `${marker(original.id)} ${INPUT_PLACEHOLDER} (${tokens} tokens${original.id ? `; ${where}` : ''})`;
      }
      // The binding leaves out what clearing changes: the call reads as the same call once cleared, and so do its results.
      const signed = ctx.markers.placeholderArgs(bound.call(index, call.slot) ?? '', original.id, args);
      w.replaceArgs(index, call.slot, signed, original.id ? 'offload' : 'clear', original);
    }
  });
}

const COMPACT_RESPONSE = {
  artifacts: z.array(ArtifactRefSchema).describe('the originals offloaded, one per placeholder (with content: store inline)'),
  cost: CostSchema.optional().describe('when pricing or usage is given, or clear_at_least is "auto"'),
};

export const compactStrategy: Strategy<typeof CompactOptions, CompactExtra, typeof COMPACT_RESPONSE> = {
  kind: 'compact',
  options: CompactOptions,
  response: COMPACT_RESPONSE,
  idle: () => ({ artifacts: [] }),
  run,
};
