import { insertItems } from '../../../history/plan/apply.js';
import type { Insert } from '../../../history/plan/types.js';
import { qaHeaderLine } from '../../../history/vocabulary.js';
import type { PreparedHistory } from '../../types.js';
import type { Around, Pair, Section, SectionsOptions } from './model.js';

/** One sections run as the QA merge sees it: the history, the options, and `runSections`' helpers. */
export interface SectionsRun {
  h: PreparedHistory;
  o: SectionsOptions;
  /** Replaced in place: the merged sections become one. */
  sections: Section[];
  sizeOf: (p: Pair) => number;
  summarizePairs: (pairs: readonly Pair[], current: boolean, around: Around) => Promise<Pair | undefined>;
  around: (si: number, a: number, b: number) => Around;
  summarizeUsers: (indexes: readonly number[]) => Promise<string>;
  offloadRange: (indexes: readonly number[]) => { id: string | null };
  indexesOf: (pairs: readonly Pair[]) => number[];
}

export async function qaMerge(run: SectionsRun): Promise<void> {
  const { h, o, sections, sizeOf, summarizePairs, around, summarizeUsers, offloadRange, indexesOf } = run;
  const sizeOfSection = (s: Section) =>
    s.header.reduce((n, i) => n + (h.counts[i] as number), 0) + s.pairs.reduce((n, p) => n + sizeOf(p), 0);
  const total = sections.reduce((n, s) => n + sizeOfSection(s), 0);
  if (sections.length <= o.qa.max_sections && total <= o.qa.max_tokens) return;
  // Keep the newest sections that fit (at least one), merge the rest.
  let keepFrom = sections.length - 1;
  let used = sizeOfSection(sections[keepFrom] as Section);
  while (
    keepFrom > 1 &&
    sections.length - keepFrom < o.qa.max_sections - 1 &&
    used + sizeOfSection(sections[keepFrom - 1] as Section) <= o.qa.max_tokens
  ) {
    used += sizeOfSection(sections[--keepFrom] as Section);
  }
  const merged = sections.slice(0, keepFrom);
  if (merged.length < 2) return;
  const headers = merged.flatMap((s) => s.header);
  const userText = o.summarize_user_messages
    ? await summarizeUsers(headers)
    : headers
        .map((i) => h.format.prose(h.messages[i]))
        .filter(Boolean)
        .join('\n\n');
  // The header names the merged span's originals (headers and pairs, in order): expand puts the
  // span back in place of the header and the summary pair after it.
  const span = [...new Set([...headers, ...indexesOf(merged.flatMap((s) => s.pairs))])].sort((a, b) => a - b);
  const { id } = offloadRange(span);
  const header: Insert = { kind: 'text', role: 'user', text: `${qaHeaderLine(id)}${userText}` };
  const userItem = insertItems(h.format, [header])?.[0];
  const next = sections[keepFrom]?.header.length ? h.items[sections[keepFrom]?.header[0] as number] : around(keepFrom, 0, 0).prev;
  const body = await summarizePairs(
    merged.flatMap((s) => s.pairs),
    false,
    { prev: userItem, next },
  );
  if (!body) return;
  const qa: Section = { header: merged.flatMap((s) => s.header), qaHeader: header, pairs: [body] };
  sections.splice(0, keepFrom, qa);
}
