import { CompactorError } from '../../../errors.js';
import { sha256Hex } from '../../../history/address.js';
import { insertItems, insertTokens } from '../../../history/plan/apply.js';
import type { ArtifactRef, Entry, Insert, OriginalSpec, Removal } from '../../../history/plan/types.js';
import type { Item, Warning } from '../../../history/types.js';
import { sectionSummaryLine } from '../../../history/vocabulary.js';
import type { NewArtifact } from '../../../store/types.js';
import type { SettledSummary, SummaryPlan, SummaryRequest, SummaryUsage } from '../../../summarizers/types.js';
import { addUsage, billedBy, NO_SUMMARY_USAGE } from '../../../summarizers/types.js';
import { countWith, type PreparedHistory, type StrategyContext, type StrategyResult } from '../../types.js';
import { billed, cachedSummary, PaidFailure, summaryKey } from '../cache.js';
import { dryRunResult } from '../dry.js';
import { allowedModel, rangeArtifact, summaryRequest } from '../range.js';
import { type Around, isSummaryPair, lastReasoning, type Pair, type Section, type SectionsOptions, sectionsOf } from './model.js';
import { qaMerge } from './qa.js';

/**
 * Sections mode (PentAGI's chain summarization): (1) every section but the newest `keep_sections`
 * becomes its header plus one summary pair (sections summarized concurrently); (2) in the kept
 * sections, a pair but the last over `max_pair_tokens` is summarized alone, and a section still over
 * `max_section_tokens` has its oldest pairs summarized into one so that it fits in 75% of the
 * limit; (3) QA merge: past `qa.max_sections` sections or `qa.max_tokens`, the older sections become
 * one, under a header joining their user messages. Summary pairs are recognized on later calls, so
 * a second run changes nothing and calls no LLM.
 */
export async function runSections(
  h: PreparedHistory,
  o: SectionsOptions,
  ctx: StrategyContext,
): Promise<StrategyResult<{ summary: null; plan?: SummaryPlan; artifacts?: ArtifactRef[] }>> {
  const { format, messages, counts } = h;
  const count = countWith(h, ctx);
  const summarizer = ctx.summarizer;
  const warnings: Warning[] = [];
  let usage: SummaryUsage = NO_SUMMARY_USAGE;
  let model: string | null = null;
  /** Ranges to offload, in the order they were made (a summary pair not written still made its range). */
  const artifacts: OriginalSpec[] = [];
  const sections = sectionsOf(h);
  const sizeOf = (p: Pair) =>
    p.kind === 'original'
      ? counts.slice(p.group.start, p.group.end).reduce((a, b) => a + b, 0)
      : insertTokens(format, p.insert, count);
  const indexesOf = (pairs: readonly Pair[]) =>
    pairs.flatMap((p) =>
      p.kind === 'original' ? Array.from({ length: p.group.end - p.group.start }, (_, k) => p.group.start + k) : p.covers,
    );
  let calls = 0;

  /** The originals of these messages as one range artifact (offloaded with `store: server`); its id. */
  const offloadRange = (indexes: readonly number[]): { id: string | null; rangeJson: string } => {
    const ranged = rangeArtifact('section_range', h, indexes, null, o.store, ctx.address);
    artifacts.push(...ranged.specs);
    return { id: ranged.id, rangeJson: ranged.json };
  };

  /** Summary-cache entries to write (best effort) for the summaries this run asked for. */
  const bestEffort: NewArtifact[] = [];
  /**
   * One summary, from the summary cache (nothing billed), or asked (shared with an identical one in
   * flight) and then cached: the same history summarized twice costs nothing the second time.
   */
  const settleCached = async (
    purpose: string,
    asked: SectionsOptions,
    covered: string,
    request: (signal: AbortSignal | undefined) => SummaryRequest,
  ): Promise<SettledSummary> => {
    if (!summarizer) throw new Error('unreachable: no summarizer');
    const got = await cachedSummary(
      ctx,
      summarizer,
      summaryKey(purpose, summarizer, asked, covered, ctx.address),
      asked.timeout_ms,
      request,
    );
    if (got.entry) bestEffort.push(got.entry);
    return got;
  };

  /** Dry run: the summarizer calls the run would make, each with its input size. */
  const plannedCalls: SummaryPlan['calls'] = [];
  const standIn = (covered: readonly number[]): SettledSummary => {
    plannedCalls.push({ purpose: 'summary', input_tokens: covered.reduce((n, i) => n + (counts[i] as number), 0) });
    return { text: '', facts: { found: 0, kept: 0, appended: 0 }, model: null, usage: NO_SUMMARY_USAGE };
  };

  /** Summarizes pairs into one summary pair, in the role their originals had. */
  const summarizePairs = async (pairs: readonly Pair[], current: boolean, around: Around): Promise<Pair | undefined> => {
    const covered = indexesOf(pairs);
    const items = covered.map((i) => h.items[i] as Item);
    const usedTools = items.some((it) => it.calls.length > 0);
    // The form a summary pair takes: a synthetic tool exchange where the summarized pairs used
    // tools and the format takes one, else marked assistant text; either must fit its neighbours.
    const id0 = `call_summary_${sha256Hex(JSON.stringify(covered)).slice(0, 16)}`;
    const exchange = (text: string, signed: boolean, reasoning: string | undefined): Insert[] => [
      { kind: 'exchange', id: id0, text, signed, reasoning },
    ];
    const plain = (text: string): Insert[] => [{ kind: 'text', role: 'assistant', text }];
    const fits = (form: Insert[]) => {
      const roles = insertItems(format, form);
      const first = roles?.[0];
      const last = roles?.[roles.length - 1];
      return !!first && !!last && format.canFollow(around.prev, first) && (!around.next || format.canFollow(last, around.next));
    };
    const probe =
      usedTools && insertItems(format, exchange('x', false, undefined)) ? exchange('x', false, undefined) : plain('x');
    const form = [probe, plain('x')].findIndex(fits);
    if (form < 0) {
      warnings.push({
        code: 'unsafe_cut_avoided',
        message: `messages ${covered[0]}–${covered[covered.length - 1]} were not summarized: no summary form fits between their neighbours in ${format.name}`,
      });
      return undefined;
    }
    const { id, rangeJson } = offloadRange(covered);
    if (!summarizer) throw new Error('unreachable: no summarizer');
    calls++;
    // A dry run plans the call and goes on with an empty stand-in: what is summarized does not
    // depend on the summary's text (the merges that depend on its size are skipped below).
    const settled = ctx.dryRun
      ? standIn(covered)
      : await settleCached('section', o, rangeJson, (signal) => summaryRequest(h, covered, null, o, signal));
    usage = addUsage(usage, settled.usage);
    if (settled.usage.calls > 0) model = settled.model;
    const text = `${sectionSummaryLine(id)}${settled.text}`;
    // Reasoning survives only in the current turn: a placeholder signature, the last reasoning text.
    const signed = current && items.some((it) => it.thinking || format.hasSignature(messages[it.index]));
    const reasoning = current ? lastReasoning(h, covered) : undefined;
    const insert = form === 0 && usedTools && probe[0]?.kind === 'exchange' ? exchange(text, signed, reasoning) : plain(text);
    return { kind: 'summary', insert, covers: covered };
  };

  /** The user messages of merged sections, summarized (QA merge with `summarize_user_messages`). */
  const summarizeUsers = async (indexes: readonly number[]): Promise<string> => {
    if (!summarizer) return '';
    calls++;
    const prompt = [
      o.summarizer.prompt,
      "Summarize only the user's requests and constraints, in the user's own words where possible.",
    ]
      .filter(Boolean)
      .join('\n');
    const asked = { ...o, summarizer: { ...o.summarizer, prompt } };
    const settled = await settleCached('users', asked, JSON.stringify(indexes.map((i) => messages[i])), (signal) =>
      summaryRequest(h, indexes, null, asked, signal),
    );
    usage = addUsage(usage, settled.usage);
    if (settled.usage.calls > 0) model = settled.model;
    return settled.text;
  };
  const unchanged = (reason: string): StrategyResult<{ summary: null }> => ({
    warnings,
    reason,
    extra: () => ({ summary: null }),
  });
  if (!summarizer) return unchanged('nothing_to_reduce');
  // A model not allowed is a 400 before anything is planned or asked (dry runs too).
  const askedModel = allowedModel(summarizer, o.summarizer.model);

  const itemsOf = (p: Pair): Item[] =>
    p.kind === 'original' ? (h.items.slice(p.group.start, p.group.end) as Item[]) : (insertItems(format, p.insert) ?? []);
  const firstOf = (sec: Section): Item | undefined =>
    sec.header.length ? h.items[sec.header[0] as number] : sec.pairs[0] ? itemsOf(sec.pairs[0])[0] : undefined;
  const lastOf = (sec: Section): Item | undefined => {
    const p = sec.pairs[sec.pairs.length - 1];
    return p ? itemsOf(p).at(-1) : sec.header.length ? h.items[sec.header[sec.header.length - 1] as number] : undefined;
  };
  /** What pairs a..b of section si sit between. */
  const around = (si: number, a: number, b: number): Around => {
    const sec = sections[si] as Section;
    let prev: Item | undefined;
    if (a > 0) prev = itemsOf(sec.pairs[a - 1] as Pair).at(-1);
    else if (sec.header.length) prev = h.items[sec.header[sec.header.length - 1] as number];
    else prev = si > 0 ? lastOf(sections[si - 1] as Section) : h.head > 0 ? h.items[h.head - 1] : undefined;
    const next =
      b + 1 < sec.pairs.length
        ? itemsOf(sec.pairs[b + 1] as Pair)[0]
        : si + 1 < sections.length
          ? firstOf(sections[si + 1] as Section)
          : undefined;
    return { prev, next };
  };

  // What each step would summarize, in order (a dry run follows it without asking for summaries).
  const kept = Math.max(1, o.keep_sections);
  const older = sections.slice(0, Math.max(0, sections.length - kept));
  const step1 = older.filter(
    (s) => !(s.pairs.length === 1 && s.pairs[0]?.kind === 'original' && isSummaryPair(h, s.pairs[0].group)) && s.pairs.length > 0,
  );
  try {
    // 1. Older sections: header plus one summary pair, concurrently.
    // Every call is waited for, even after one fails: what the others bill is reported, and cached.
    // Where each section is (`sections.indexOf` for each would be quadratic in their number).
    const position = new Map(sections.map((s, si) => [s, si]));
    const settled = await Promise.allSettled(
      step1.map(async (s) => {
        const summary = await summarizePairs(s.pairs, false, around(position.get(s) as number, 0, s.pairs.length - 1));
        if (summary) s.pairs = [summary];
      }),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    // 2. Kept sections: oversized pairs alone, then the oldest pairs together until the section fits.
    for (const s of sections.slice(sections.length - kept)) {
      const si = position.get(s) as number;
      const last = s.pairs.length - 1;
      for (let i = 0; i < last; i++) {
        const p = s.pairs[i] as Pair;
        if (p.kind === 'original' && !isSummaryPair(h, p.group) && sizeOf(p) > o.max_pair_tokens) {
          s.pairs[i] = (await summarizePairs([p], true, around(si, i, i))) ?? p;
        }
      }
      const headerSize = s.header.reduce((n, i) => n + (counts[i] as number), 0);
      const total = () => headerSize + s.pairs.reduce((n, p) => n + sizeOf(p), 0);
      // A dry run does not know the summaries' sizes, which decide this merge and the QA merge.
      if (!ctx.dryRun && total() > o.max_section_tokens && s.pairs.length > 2) {
        const budget = 0.75 * o.max_section_tokens - headerSize - o.summarizer.max_tokens;
        let keepFrom = s.pairs.length - 1;
        let used = sizeOf(s.pairs[keepFrom] as Pair);
        while (keepFrom > 1 && used + sizeOf(s.pairs[keepFrom - 1] as Pair) <= budget)
          used += sizeOf(s.pairs[--keepFrom] as Pair);
        const merged =
          keepFrom > 1 ? await summarizePairs(s.pairs.slice(0, keepFrom), true, around(si, 0, keepFrom - 1)) : undefined;
        if (merged) s.pairs = [merged, ...s.pairs.slice(keepFrom)];
      }
    }
    // 3. QA merge: the older sections become one when there are too many, or they are too large.
    if (o.qa.enabled && !ctx.dryRun)
      await qaMerge({ h, o, sections, sizeOf, summarizePairs, around, summarizeUsers, offloadRange, indexesOf });
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    // Everything answered before the failure was billed: the caller reports it with on_failure;
    // and the summaries already paid for are cached even though this run fails.
    throw new PaidFailure(error, addUsage(usage, billedBy(error)), bestEffort);
  }
  if (calls === 0) return unchanged('nothing_to_reduce');

  // Assemble: head, then each section's header and pairs.
  const entries: Entry[] = [];
  const removed = new Map<number, Removal>();
  for (let i = 0; i < h.head; i++) entries.push({ index: i, edits: [] });
  const inserted: Insert[] = [];
  for (const s of sections) {
    if (s.qaHeader !== undefined) {
      entries.push({ insert: [s.qaHeader] });
      inserted.push(s.qaHeader);
      for (const i of s.header) removed.set(i, { action: 'summarize' });
    } else for (const i of s.header) entries.push({ index: i, edits: [] });
    for (const p of s.pairs) {
      if (p.kind === 'original') {
        for (let i = p.group.start; i < p.group.end; i++) entries.push({ index: i, edits: [] });
        continue;
      }
      entries.push({ insert: p.insert });
      inserted.push(...p.insert);
      for (const i of p.covers) removed.set(i, { action: 'summarize' });
    }
  }
  if (ctx.dryRun) {
    const plan = { calls: plannedCalls, model: askedModel };
    const unpredicted = 'the merge past max_section_tokens and the QA merge, which depend on the summaries’ sizes';
    const dry = { summaries: calls, budget: o.summarizer.max_tokens, plan, unpredicted };
    return dryRunResult({ entries, removed, artifacts: [] }, dry, warnings);
  }
  // Only the ranges a summary or QA header in the output names (a merge that was not written names
  // none): the messages this run inserted are the only ones that can name them.
  // The ids they name, read once (a search of all of them for each artifact is quadratic).
  const named = new Set(artifacts.length > 0 ? JSON.stringify(inserted.map((i) => i.text)).match(/art_[0-9a-f]{24}/g) : []);
  const written = artifacts.filter((a) => named.has(a.id));
  return {
    plan: { entries, removed, artifacts: written },
    warnings,
    bestEffort,
    usage: billed(usage, model),
    extra: (applied) => ({ summary: null, artifacts: applied?.artifacts ?? [] }),
  };
}
