import { createHash } from 'node:crypto';

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

/** The content address of an original: `art_` + 24 hex digits of its SHA-256, and the full hash. */
export function contentAddress(json: string): { id: string; sha256: string } {
  const sha256 = createHash('sha256').update(json).digest('hex');
  return { id: `art_${sha256.slice(0, 24)}`, sha256 };
}
