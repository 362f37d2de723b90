import { insertItems } from '../../../history/plan/apply.js';
import type { Insert } from '../../../history/plan/types.js';
import { pinnedSection, type Section } from './model.js';
import type { SectionsRun } from './state.js';
import { summarizePairs, summarizeUsers } from './summary-pair.js';

/**
 * Step 3, QA merge: past `qa.max_sections` sections or `qa.max_tokens`, all but the newest
 * sections that fit become one section, whose header joins (or, with `summarize_user_messages`,
 * summarizes) their user messages and names the merged span (so expand restores it, user messages
 * included), and whose body is one summary.
 */
export async function qaMerge(run: SectionsRun): Promise<void> {
  const { h, o, sections } = run;
  const total = sections.reduce((n, s) => n + run.sizeOfSection(s), 0);
  if (sections.length <= o.qa.max_sections && total <= o.qa.max_tokens) return;
  // Keep the newest sections that fit (at least one), merge the rest.
  let keepFrom = sections.length - 1;
  let used = run.sizeOfSection(sections[keepFrom] as Section);
  while (
    keepFrom > 1 &&
    sections.length - keepFrom < o.qa.max_sections - 1 &&
    used + run.sizeOfSection(sections[keepFrom - 1] as Section) <= o.qa.max_tokens
  ) {
    used += run.sizeOfSection(sections[--keepFrom] as Section);
  }
  // Sections holding a pinned instruction stay: only those after the last of them merge.
  // The first user turn (the task) stays too: its section is never merged into a QA header.
  // A QA header written first by an earlier release is folded like any QA header.
  const task = h.firstUser < 0 ? -1 : sections.findIndex((s) => s.header.includes(h.firstUser));
  const first = sections[task]?.header[0];
  const earlierQa = first !== undefined && run.ctx.markers.readQaHeader(h.format.prose(h.messages[first])) !== undefined;
  const start = Math.max(earlierQa ? 0 : task + 1, sections.slice(0, keepFrom).findLastIndex((s) => pinnedSection(h, s)) + 1);
  const merged = sections.slice(start, keepFrom);
  if (merged.length < 2) return;
  const headers = merged.flatMap((s) => s.header);
  const userText = o.summarize_user_messages
    ? await summarizeUsers(run, headers)
    : headers
        .map((i) => h.format.prose(h.messages[i]))
        .filter(Boolean)
        .join('\n\n');
  // The header names the merged span's originals (headers and pairs, in order): expand puts the
  // span back in place of the header and the summary pair after it.
  const span = [...new Set([...headers, ...run.indexesOf(merged.flatMap((s) => s.pairs))])].sort((a, b) => a - b);
  const { id } = run.offloadRange(span);
  const header: Insert = { kind: 'text', role: 'user', text: run.ctx.markers.qaHeader(id, userText) };
  const userItem = insertItems(h.format, [header])?.[0];
  const before = run.before(start);
  if (userItem && !h.format.canFollow(before, userItem)) {
    run.warnings.push({
      code: 'unsafe_cut_avoided',
      message: `sections ${start}–${keepFrom - 1} were not merged: their merged header cannot follow message ${before?.index ?? 'none'} in ${h.format.name}`,
    });
    return;
  }
  const next = sections[keepFrom]?.header.length
    ? h.items[sections[keepFrom]?.header[0] as number]
    : run.around(keepFrom, 0, 0).prev;
  const body = await summarizePairs(
    run,
    merged.flatMap((s) => s.pairs),
    false,
    { prev: userItem, next },
  );
  if (!body) return;
  const qa: Section = { header: merged.flatMap((s) => s.header), qaHeader: header, pairs: [body] };
  sections.splice(start, keepFrom - start, qa);
}
