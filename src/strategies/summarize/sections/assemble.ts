import type { Entry, Insert, OriginalSpec, Plan, Removal } from '../../../history/plan/types.js';
import type { SectionsRun } from './state.js';

/**
 * The plan of a sections run: the head, then each section's header (its user messages, or a QA
 * header written anew in their place) and pairs (kept, or a summary pair written in place of the
 * ones it stands for). Only the ranges a summary or QA header names are offloaded (a merge that
 * was not written names none).
 */
export function assemble(run: SectionsRun): Plan {
  const { h, sections } = run;
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
  return { entries, removed, artifacts: named(run.artifacts, inserted) };
}

/** The ranges the written messages name (the ids read once: a search of all of them for each would be quadratic). */
function named(artifacts: readonly OriginalSpec[], inserted: readonly Insert[]): OriginalSpec[] {
  if (artifacts.length === 0) return [];
  const ids = new Set(JSON.stringify(inserted.map((i) => i.text)).match(/art_[0-9a-f]{24}/g));
  return artifacts.filter((a) => ids.has(a.id));
}
