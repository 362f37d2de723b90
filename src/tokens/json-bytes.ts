/** The bytes of JSON's structure, for the scans that read a body's bytes before (or beside) the parser. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

/** JSON's white space: space, line feed, carriage return, tab. */
export function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The body's bytes, read with a cursor: the scan works on the bytes as they arrived (hashing a
 * part of them needs no encoding; a decoded text with one character past Latin-1 would be encoded
 * again for each message's hash).
 */
export function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i] as number)) i++;
  return i;
}

/** Index just past the string opening at `i`: the next quote not escaped by an odd run of backslashes (each run read once: linear). */
export function skipString(b: Buffer, i: number): number {
  let q = i + 1;
  for (;;) {
    q = b.indexOf(QUOTE, q);
    if (q < 0) return b.length;
    let k = q;
    while (b[k - 1] === BACKSLASH) k--;
    if ((q - k) % 2 === 0) return q + 1;
    q++;
  }
}

/** Index just past the value starting at `i` (a string's contents skipped natively; containers by depth). */
export function skipValue(b: Buffer, i: number): number {
  const n = b.length;
  const first = b[i];
  if (first === QUOTE) return skipString(b, i);
  if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
    let j = i;
    while (j < n) {
      const c = b[j] as number;
      if (c === COMMA || c === CLOSE_ARRAY || c === CLOSE_OBJECT || isSpace(c)) break;
      j++;
    }
    return j;
  }
  let depth = 0;
  let j = i;
  while (j < n) {
    const c = b[j];
    if (c === QUOTE) {
      j = skipString(b, j);
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      if (depth === 0) return j + 1;
    }
    j++;
  }
  return n;
}
