import type { LargeText } from './types.js';

/** An answer's text: a string, or a large text generated as it is written. */
export type TextSource = string | LargeText;

/** The pieces a string answer streams in (about a few tokens each, as providers stream). */
const SMALL_PIECE = 24;
/** The pieces a large answer streams in. */
const LARGE_PIECE = 16 * 1024;

function defaultLine(n: number): string {
  return `${String(n).padStart(8, '0')} the quick brown fox jumps over the lazy dog, again and again.\n`;
}

/** The text's length in characters (a large text is ASCII unless its `line` is not). */
export function textLength(source: TextSource): number {
  return typeof source === 'string' ? source.length : source.bytes;
}

/**
 * The text in streaming pieces, generated lazily: a large text never exists whole. Deterministic:
 * iterating twice gives the same pieces.
 */
export function* textChunks(source: TextSource): Generator<string> {
  if (typeof source === 'string') {
    for (let i = 0; i < source.length; i += SMALL_PIECE) yield source.slice(i, i + SMALL_PIECE);
    return;
  }
  let left = source.bytes;
  let n = 0;
  let buffer = '';
  while (left > 0) {
    while (buffer.length < LARGE_PIECE && buffer.length < left) buffer += source.line ?? defaultLine(n++);
    const piece = buffer.slice(0, Math.min(LARGE_PIECE, left));
    buffer = buffer.slice(piece.length);
    left -= piece.length;
    yield piece;
  }
}

/** The whole text (for non-streaming answers, which hold their body anyway). */
export function wholeText(source: TextSource): string {
  return typeof source === 'string' ? source : [...textChunks(source)].join('');
}

/**
 * `value` as JSON with the string `marker` (which must occur once, as a whole JSON string) replaced
 * by the text, written in pieces: an event that carries a large text whole (Responses'
 * `output_text.done`) is streamed without building it.
 */
export function* spliceText(value: unknown, marker: string, source: TextSource): Generator<string> {
  const json = JSON.stringify(value);
  const quoted = JSON.stringify(marker);
  const at = json.indexOf(quoted);
  if (at === -1) throw new Error('spliceText: marker not found');
  yield `${json.slice(0, at)}"`;
  for (const piece of textChunks(source)) yield JSON.stringify(piece).slice(1, -1);
  yield `"${json.slice(at + quoted.length)}`;
}
