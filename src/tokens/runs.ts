/**
 * Where the pre-tokenizers of o200k_base and cl100k_base could cut a piece longer than `minLength`.
 *
 * Their regexes (gpt-tokenizer `encodingParams/constants`) cut text into pieces that are, at most,
 * one optional leading character, then a run of one class, then a short suffix:
 * - letters: `\p{L}+` (cl100k) or letters and marks `[\p{L}\p{M}]+` (o200k), then a contraction
 *   (`'s`, `'ll`…, at most three characters);
 * - punctuation and symbols `[^\s\p{L}\p{N}]+` (marks included, emoji included), then in cl100k a
 *   run of `[\r\n]`, in o200k a run of any mix of `\r`, `\n` and `/`;
 * - whitespace `\s+` (Unicode spaces included);
 * - numbers: at most three `\p{N}`, never long.
 *
 * A run is therefore tracked for each of four kinds a character can extend: LETTER (`\p{L}\p{M}`),
 * OTHER (not `\s\p{L}\p{N}`: a mark extends both), SPACE (`\s`) and TAIL (`\r`, `\n`, `/`: o200k's
 * suffix). Outside the runs of some kind longer than `minLength`, no piece is longer than about
 * `2 * minLength + 4` characters, so byte-pair merging (quadratic in a piece's length) is bounded.
 */
const LETTER = 1;
const OTHER = 2;
const SPACE = 4;
const TAIL = 8;
const KINDS = 4;
/** Set in the cache when a code point's kinds are known (0 means not yet classified). */
const KNOWN = 16;

const ASCII_KINDS = new Uint8Array(128).map((_, code) => {
  if (code === 10 || code === 13) return SPACE | TAIL;
  if (code === 32 || (code >= 9 && code <= 13)) return SPACE;
  if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122)) return LETTER;
  if (code >= 48 && code <= 57) return 0;
  return code === 47 ? OTHER | TAIL : OTHER;
});

const MARK = /^\p{M}$/u;
const LETTER_CHAR = /^\p{L}$/u;
const NUMBER_CHAR = /^\p{N}$/u;
const SPACE_CHAR = /^\s$/u;

function classify(codePoint: number): number {
  const char = String.fromCodePoint(codePoint);
  if (MARK.test(char)) return LETTER | OTHER;
  if (LETTER_CHAR.test(char)) return LETTER;
  if (NUMBER_CHAR.test(char)) return 0;
  if (SPACE_CHAR.test(char)) return SPACE;
  return OTHER;
}

/** Kinds of the Basic Multilingual Plane, filled as code points are met: 64 KB, one regex test each. */
const BMP = new Uint8Array(0x10000);
/** Kinds of astral code points (emoji…), met far more rarely; emptied when it grows past its bound. */
const ASTRAL = new Map<number, number>();
const ASTRAL_BOUND = 1 << 14;

function kindsOf(codePoint: number): number {
  if (codePoint < 0x10000) {
    const cached = BMP[codePoint] as number;
    if (cached !== 0) return cached & ~KNOWN;
    const kinds = classify(codePoint);
    BMP[codePoint] = kinds | KNOWN;
    return kinds;
  }
  const cached = ASTRAL.get(codePoint);
  if (cached !== undefined) return cached;
  const kinds = classify(codePoint);
  if (ASTRAL.size >= ASTRAL_BOUND) ASTRAL.clear();
  ASTRAL.set(codePoint, kinds);
  return kinds;
}

/** Merges [start, end) pairs, in any order and possibly overlapping, into sorted disjoint ones. */
function merge(pairs: number[]): number[] {
  const spans: [number, number][] = [];
  for (let i = 0; i < pairs.length; i += 2) spans.push([pairs[i] as number, pairs[i + 1] as number]);
  spans.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [start, end] of spans) {
    const last = out.length - 1;
    if (out.length > 0 && start <= (out[last] as number)) out[last] = Math.max(out[last] as number, end);
    else out.push(start, end);
  }
  return out;
}

/**
 * Sorted, disjoint [start, end) pairs (UTF-16 offsets, on code point boundaries) covering every run
 * of one kind at least `minLength` code units long. One pass over the text; each distinct non-ASCII
 * code point is classified once (a `/u` regex test), then read from a table.
 */
export function longRuns(text: string, minLength: number): number[] {
  const found: number[] = [];
  const starts = new Int32Array(KINDS).fill(-1);
  const n = text.length;
  let previous = -1;
  const close = (kinds: number, at: number) => {
    for (let k = 0; k < KINDS; k++) {
      const start = starts[k] as number;
      if ((kinds & (1 << k)) !== 0) {
        if (start < 0) starts[k] = at;
      } else if (start >= 0) {
        if (at - start >= minLength) found.push(start, at);
        starts[k] = -1;
      }
    }
  };
  for (let i = 0; i < n; ) {
    const code = text.charCodeAt(i);
    let kinds: number;
    let width = 1;
    if (code < 128) kinds = ASCII_KINDS[code] as number;
    else {
      const point = text.codePointAt(i) as number;
      if (point > 0xffff) width = 2;
      kinds = kindsOf(point);
    }
    // The same kinds as the character before: every run just goes on.
    if (kinds !== previous) {
      close(kinds, i);
      previous = kinds;
    }
    i += width;
  }
  close(0, n);
  return merge(found);
}

/** Where to cut `text` near `at` without splitting a surrogate pair. */
export function cutAt(text: string, at: number): number {
  const code = text.charCodeAt(at);
  const before = text.charCodeAt(at - 1);
  return code >= 0xdc00 && code <= 0xdfff && before >= 0xd800 && before <= 0xdbff ? at + 1 : at;
}
