import { type Count, insertItems, insertTokens } from '../../../history/plan/apply.js';
import type { OriginalSpec } from '../../../history/plan/types.js';
import type { Item, Warning } from '../../../history/types.js';
import type { NewArtifact } from '../../../store/types.js';
import { NO_FACTS } from '../../../summarizers/facts.js';
import {
  addUsage,
  NO_SUMMARY_USAGE,
  type SettledSummary,
  type Summarizer,
  type SummaryPlan,
} from '../../../summarizers/types.js';
import { firstTurn } from '../../first-turn.js';
import { countWith, type PreparedHistory, type StrategyContext } from '../../types.js';
import { cachedSummary, type SummaryRequestOf, summaryKey } from '../cache.js';
import { rangeArtifact } from '../range.js';
import { type Around, type Pair, type Section, type SectionsOptions, sectionsOf } from './model.js';

/**
 * One sections run: the history, its sections (rewritten in place as steps summarize them), and
 * what the run has made so far (the ranges to offload, the summary-cache entries to write, what
 * the summarizer billed, the calls a dry run would make). Each step of sections mode is a function
 * of this object.
 */
export class SectionsRun {
  readonly sections: Section[];
  readonly warnings: Warning[] = [];
  /** Ranges to offload, in the order they were made (a summary pair not written still made its range). */
  readonly artifacts: OriginalSpec[] = [];
  /** Summary-cache entries to write (best effort) for the summaries this run asked for. */
  readonly bestEffort: NewArtifact[] = [];
  /** Dry run: the summarizer calls the run would make, each with its input size. */
  readonly plannedCalls: SummaryPlan['calls'] = [];
  usage = NO_SUMMARY_USAGE;
  model: string | null = null;
  /** Summaries asked for (or planned). */
  calls = 0;
  readonly count: Count;

  constructor(
    readonly h: PreparedHistory,
    readonly o: SectionsOptions,
    readonly ctx: StrategyContext,
    readonly summarizer: Summarizer,
  ) {
    this.sections = sectionsOf(h, firstTurn(h, ctx.markers));
    this.count = countWith(h, ctx);
  }

  sizeOf(p: Pair): number {
    if (p.kind !== 'original') return insertTokens(this.h.format, p.insert, this.count);
    let n = 0;
    for (let i = p.group.start; i < p.group.end; i++) n += this.h.counts[i] as number;
    return n;
  }

  sizeOfSection(s: Section): number {
    return s.header.reduce((n, i) => n + (this.h.counts[i] as number), 0) + s.pairs.reduce((n, p) => n + this.sizeOf(p), 0);
  }

  /** The input messages pairs stand for, in order. */
  indexesOf(pairs: readonly Pair[]): number[] {
    return pairs.flatMap((p) =>
      p.kind === 'original' ? Array.from({ length: p.group.end - p.group.start }, (_, k) => p.group.start + k) : p.covers,
    );
  }

  /** The originals of these messages as one range artifact (offloaded with `store: server`); its id. */
  offloadRange(indexes: readonly number[]): { id: string | null; rangeJson: string } {
    const ranged = rangeArtifact('section_range', this.h, indexes, null, this.o.store, this.ctx.address);
    this.artifacts.push(...ranged.specs);
    return { id: ranged.id, rangeJson: ranged.json };
  }

  /**
   * One summary, from the summary cache (nothing billed), or asked (shared with an identical one in
   * flight) and then cached: the same history summarized twice costs nothing the second time. A dry
   * run plans the call instead and goes on with an empty stand-in.
   */
  async settle(
    purpose: string,
    asked: SectionsOptions,
    covered: string,
    indexes: readonly number[],
    request: SummaryRequestOf,
  ): Promise<SettledSummary> {
    this.calls++;
    if (this.ctx.dryRun) {
      this.plannedCalls.push({ purpose: 'summary', input_tokens: indexes.reduce((n, i) => n + (this.h.counts[i] as number), 0) });
      return { text: '', facts: NO_FACTS, model: null, usage: NO_SUMMARY_USAGE };
    }
    const key = summaryKey(purpose, this.summarizer, asked, covered, this.ctx.address);
    const got = await cachedSummary(this.ctx, this.summarizer, key, asked.timeout_ms, request);
    if (got.entry) this.bestEffort.push(got.entry);
    this.usage = addUsage(this.usage, got.usage);
    if (got.usage.calls > 0) this.model = got.model;
    return got;
  }

  /** The history-model items of a pair (a summary pair's as the plan would write it). */
  itemsOf(p: Pair): Item[] {
    return p.kind === 'original'
      ? (this.h.items.slice(p.group.start, p.group.end) as Item[])
      : (insertItems(this.h.format, p.insert) ?? []);
  }

  private firstOf(sec: Section): Item | undefined {
    if (sec.header.length) return this.h.items[sec.header[0] as number];
    return sec.pairs[0] ? this.itemsOf(sec.pairs[0])[0] : undefined;
  }

  private lastOf(sec: Section): Item | undefined {
    const p = sec.pairs[sec.pairs.length - 1];
    if (p) return this.itemsOf(p).at(-1);
    return sec.header.length ? this.h.items[sec.header[sec.header.length - 1] as number] : undefined;
  }

  /** The message before section `si`: the last of the section before it, or the head's last. */
  before(si: number): Item | undefined {
    const { sections, h } = this;
    return si > 0 ? this.lastOf(sections[si - 1] as Section) : h.head > 0 ? h.items[h.head - 1] : undefined;
  }

  /** What pairs a..b of section `si` sit between. */
  around(si: number, a: number, b: number): Around {
    const { sections, h } = this;
    const sec = sections[si] as Section;
    let prev: Item | undefined;
    if (a > 0) prev = this.itemsOf(sec.pairs[a - 1] as Pair).at(-1);
    else if (sec.header.length) prev = h.items[sec.header[sec.header.length - 1] as number];
    else prev = si > 0 ? this.lastOf(sections[si - 1] as Section) : h.head > 0 ? h.items[h.head - 1] : undefined;
    let next: Item | undefined;
    if (b + 1 < sec.pairs.length) next = this.itemsOf(sec.pairs[b + 1] as Pair)[0];
    else if (si + 1 < sections.length) next = this.firstOf(sections[si + 1] as Section);
    return { prev, next };
  }
}
