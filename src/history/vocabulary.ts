/**
 * The vocabulary Compactor writes into histories and reads back on later calls, in one place:
 * every marker and its parser, the summary tool's name and the summarized range's payload.
 * Recognized exactly, never guessed.
 *
 * `[compactor:art_<24 hex>]` names the artifact holding the original (expand restores it), and
 * `[compactor:cleared]` marks a lossy clearing (`store: none`).
 */
export const ARTIFACT_ID = /^art_[0-9a-f]{24}$/;
const MARKER_SOURCE = '\\[compactor:(art_[0-9a-f]{24}|cleared)\\]';
const MARKER = new RegExp(MARKER_SOURCE);

export function marker(id: string | null): string {
  return `[compactor:${id ?? 'cleared'}]`;
}

/** Whether a text carries any of our markers (then it was written by Compactor: leave it alone). */
export function hasMarker(text: string): boolean {
  return MARKER.test(text);
}

/** Artifact ids named by markers in a text, in order, without repeats. */
export function markedIds(text: string): string[] {
  const ids = new Set<string>();
  for (const m of text.matchAll(new RegExp(MARKER_SOURCE, 'g'))) if (m[1] && m[1] !== 'cleared') ids.add(m[1]);
  return [...ids];
}

/** Where a summary of ours sits: its own message, a request/answer pair, or joined to a neighbour. */
export type SummaryPlacement = 'own' | 'pair' | 'joined' | 'joined-string';

export interface SummaryMarker {
  /** The artifact holding the summarized range, or null with `store: none`. */
  id: string | null;
  placement: SummaryPlacement;
  /** How many original messages the summary stands for, earlier summaries included. */
  covers: number;
  /** The summary's text without its marker line. */
  text: string;
}

const SUMMARY_LINE = /^\[compactor:summary (art_[0-9a-f]{24}|none) (own|pair|joined|joined-string) covers=(\d+)\]\n/;

/** The first line of every summary Compactor writes; recognized exactly on later calls. */
export function summaryMarker(id: string | null, placement: SummaryPlacement, covers: number): string {
  return `[compactor:summary ${id ?? 'none'} ${placement} covers=${covers}]\n`;
}

/** Reads a summary marker at the start of a text, or undefined when the text is not ours. */
export function parseSummary(text: string | undefined): SummaryMarker | undefined {
  const m = text === undefined ? null : SUMMARY_LINE.exec(text);
  if (!m || text === undefined) return undefined;
  return {
    id: m[1] === 'none' ? null : (m[1] as string),
    placement: m[2] as SummaryPlacement,
    covers: Number(m[3]),
    text: text.slice(m[0].length),
  };
}

/** The user half of a `pair` summary. */
export const SUMMARY_REQUEST = '[compactor:summary-request] Summarize the conversation so far.';

/** The name of the synthetic tool whose exchange holds a section summary (formats that accept one). */
export const SUMMARY_TOOL = 'compactor_summary';

const SECTION_LINE = /^\[compactor:section-summary (art_[0-9a-f]{24}|none)\]\n/;

/** The first line of a section summary (its text, or its synthetic tool result's). */
export function sectionSummaryLine(id: string | null): string {
  return `[compactor:section-summary ${id ?? 'none'}]\n`;
}

/**
 * Reads a section summary's first line: the id of the range it stands for (null with `store:
 * none`), or undefined when the text is not a section summary.
 */
export function parseSectionSummary(text: string | undefined): { id: string | null } | undefined {
  const m = text === undefined ? null : SECTION_LINE.exec(text);
  if (!m) return undefined;
  return { id: m[1] === 'none' ? null : (m[1] as string) };
}

const QA_LINE = /^\[compactor:qa-header(?: (art_[0-9a-f]{24}))?\]\n/;

/** The first line of a QA-merged header: it names the merged span's artifact (none with `store: none`). */
export function qaHeaderLine(id: string | null): string {
  return `[compactor:qa-header${id ? ` ${id}` : ''}]\n`;
}

/** Reads a QA-merged header's first line: the span's id (null when none was kept), or undefined when not one. */
export function parseQaHeader(text: string | undefined): { id: string | null } | undefined {
  const m = text === undefined ? null : QA_LINE.exec(text);
  if (!m) return undefined;
  return { id: m[1] ?? null };
}

/**
 * What a summarized range's artifact holds: the original messages, in order, and the earlier
 * summary it folded (followed by expand to restore the whole transcript).
 */
export interface RangePayload {
  messages: unknown[];
  previous_id: string | null;
}

export function rangePayload(messages: unknown[], previousId: string | null): RangePayload {
  return { messages, previous_id: previousId };
}

export function isRangePayload(value: unknown): value is RangePayload {
  return typeof value === 'object' && value !== null && Array.isArray((value as RangePayload).messages);
}

/**
 * The artifact trail's heading: the line that opens the deterministic section a summary ends with
 * (files read, created, modified and deleted, URLs, errors, tests, commands, the user's
 * constraints). A later summary finds it in the summary it folds and merges it.
 */
export const TRAIL_HEADING = '## Artifact trail (compactor)';

/** A summary's text cut at its artifact trail: the prose before it, and the trail's lines (none when it has no trail). */
export function splitTrail(text: string): { prose: string; lines: string[] } {
  const head = `${TRAIL_HEADING}\n`;
  let start = 0;
  if (!text.startsWith(head)) {
    const at = text.lastIndexOf(`\n${head}`);
    if (at < 0) return { prose: text, lines: [] };
    start = at + 1;
  }
  return { prose: text.slice(0, start).trimEnd(), lines: text.slice(start + head.length).split('\n') };
}

/** A trail line's class and its items (`class: a, b` or a `class:` line followed by `- item` lines), or undefined. */
export function trailLine(line: string): { label: string; items: string[] } | { item: string } | undefined {
  if (line.startsWith('- ')) return { item: line.slice(2) };
  const colon = line.indexOf(':');
  if (colon < 1 || colon > 24 || !/^[a-z][a-z ]*$/.test(line.slice(0, colon))) return undefined;
  const rest = line.slice(colon + 1).trim();
  return { label: line.slice(0, colon), items: rest === '' ? [] : rest.split(', ') };
}
