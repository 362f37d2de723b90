/**
 * Markers that Compactor writes into the content it rewrites, and reads back on later calls:
 * `[compactor:art_<24 hex>]` names the artifact holding the original (expand restores it), and
 * `[compactor:cleared]` marks a lossy clearing (`store: none`). Recognized exactly, never guessed.
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
