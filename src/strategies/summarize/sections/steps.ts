import { isSummaryPair, type Pair, type Section } from './model.js';
import type { SectionsRun } from './state.js';
import { summarizePairs } from './summary-pair.js';

/** The older sections step 1 summarizes: all but the newest `keep_sections`, skipping those already one summary pair. */
export function olderSections(run: SectionsRun): Section[] {
  const { sections, h } = run;
  const kept = Math.max(1, run.o.keep_sections);
  return sections
    .slice(0, Math.max(0, sections.length - kept))
    .filter(
      (s) =>
        s.pairs.length > 0 &&
        !(s.pairs.length === 1 && s.pairs[0]?.kind === 'original' && isSummaryPair(h, run.ctx.markers, s.pairs[0].group)),
    );
}

/**
 * Step 1: every older section becomes its header plus one summary pair, the sections summarized
 * concurrently. Every call is waited for, even after one fails: what the others bill is reported,
 * and cached. `position` says where each section is (looking each up would be quadratic).
 */
export async function summarizeOlder(run: SectionsRun, older: readonly Section[], position: Map<Section, number>): Promise<void> {
  const settled = await Promise.allSettled(
    older.map(async (s) => {
      const summary = await summarizePairs(run, s.pairs, false, run.around(position.get(s) as number, 0, s.pairs.length - 1));
      if (summary) s.pairs = [summary];
    }),
  );
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Step 2, last-section rotation: in each kept section, a pair but the last over `max_pair_tokens`
 * is summarized alone; a section still over `max_section_tokens` has its oldest pairs summarized
 * into one so that header, newest pairs and summary fit in 75% of the limit. The section's last
 * pair is never summarized. A dry run does not know the summaries' sizes, which decide the merge.
 */
export async function rotateKept(run: SectionsRun, position: Map<Section, number>): Promise<void> {
  const { sections, h, o } = run;
  const kept = Math.max(1, o.keep_sections);
  for (const s of sections.slice(sections.length - kept)) {
    const si = position.get(s) as number;
    const last = s.pairs.length - 1;
    for (let i = 0; i < last; i++) {
      const p = s.pairs[i] as Pair;
      if (p.kind === 'original' && !isSummaryPair(h, run.ctx.markers, p.group) && run.sizeOf(p) > o.max_pair_tokens) {
        s.pairs[i] = (await summarizePairs(run, [p], true, run.around(si, i, i))) ?? p;
      }
    }
    if (run.ctx.dryRun || run.sizeOfSection(s) <= o.max_section_tokens || s.pairs.length <= 2) continue;
    const headerSize = s.header.reduce((n, i) => n + (h.counts[i] as number), 0);
    const budget = 0.75 * o.max_section_tokens - headerSize - o.summarizer.max_tokens;
    let keepFrom = s.pairs.length - 1;
    let used = run.sizeOf(s.pairs[keepFrom] as Pair);
    while (keepFrom > 1 && used + run.sizeOf(s.pairs[keepFrom - 1] as Pair) <= budget)
      used += run.sizeOf(s.pairs[--keepFrom] as Pair);
    const merged =
      keepFrom > 1 ? await summarizePairs(run, s.pairs.slice(0, keepFrom), true, run.around(si, 0, keepFrom - 1)) : undefined;
    if (merged) s.pairs = [merged, ...s.pairs.slice(keepFrom)];
  }
}
