import type { Markers } from '../../../history/markers.js';
import type { PreparedHistory } from '../../types.js';
import { isSummaryPair, type Pair, pinnedPair, type Section, unpinnedRuns } from './model.js';
import type { SectionsRun } from './state.js';
import { summarizePairs } from './summary-pair.js';

/** Whether a run of pairs is already one summary pair of ours (a second run leaves it). */
function summarized(h: PreparedHistory, markers: Markers, run: readonly Pair[]): boolean {
  const only = run[0];
  return run.length === 1 && only?.kind === 'original' && isSummaryPair(h, markers, only.group);
}

/**
 * The older sections step 1 summarizes: all but the newest `keep_sections`, skipping those already
 * one summary pair (between pinned pairs, which stay: one summary pair per run between them).
 */
export function olderSections(run: SectionsRun): Section[] {
  const { sections, h } = run;
  const kept = Math.max(1, run.o.keep_sections);
  return sections
    .slice(0, Math.max(0, sections.length - kept))
    .filter((s) => unpinnedRuns(s.pairs).some(([from, to]) => !summarized(h, run.ctx.markers, s.pairs.slice(from, to))));
}

/**
 * Step 1: every older section becomes its header plus one summary pair (one per run of pairs
 * between pinned ones, which stay where they stand), the sections summarized concurrently. Every
 * call is waited for, even after one fails: what the others bill is reported, and cached.
 * `position` says where each section is (looking each up would be quadratic).
 */
export async function summarizeOlder(run: SectionsRun, older: readonly Section[], position: Map<Section, number>): Promise<void> {
  const { h } = run;
  const settled = await Promise.allSettled(
    older.map(async (s) => {
      const si = position.get(s) as number;
      // Each run's neighbours are pinned pairs or the section's ends, which no summary replaces.
      const runs = unpinnedRuns(s.pairs).filter(([from, to]) => !summarized(h, run.ctx.markers, s.pairs.slice(from, to)));
      const written = await Promise.all(
        runs.map(([from, to]) => summarizePairs(run, s.pairs.slice(from, to), false, run.around(si, from, to - 1))),
      );
      const pairs: Pair[] = [];
      let at = 0;
      runs.forEach(([from, to], k) => {
        pairs.push(...s.pairs.slice(at, from));
        const summary = written[k];
        pairs.push(...(summary ? [summary] : s.pairs.slice(from, to)));
        at = to;
      });
      s.pairs = [...pairs, ...s.pairs.slice(at)];
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
      if (
        p.kind === 'original' &&
        !p.group.pinned &&
        !isSummaryPair(h, run.ctx.markers, p.group) &&
        run.sizeOf(p) > o.max_pair_tokens
      ) {
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
    // Only the pairs after the last pinned one before them merge: a pinned pair stays where it stands.
    const from = s.pairs.slice(0, keepFrom).findLastIndex(pinnedPair) + 1;
    const merged =
      keepFrom - from > 1
        ? await summarizePairs(run, s.pairs.slice(from, keepFrom), true, run.around(si, from, keepFrom - 1))
        : undefined;
    if (merged) s.pairs = [...s.pairs.slice(0, from), merged, ...s.pairs.slice(keepFrom)];
  }
}
