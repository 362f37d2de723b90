import { hash } from 'node:crypto';
import { derived } from './derived.js';

/**
 * Content tags: each message of a request body named by the SHA-256 of its JSON exactly as it
 * arrived, computed in one pass over the body's text while it is at hand (issue 40's "one hashing
 * pass"). An agent sends the same prefix on every call; every value derived from a message alone
 * (its token count, the SHA-256 of one of its parts, of a range of messages) is then found by
 * the tag instead of being stringified and hashed again. A tag names the bytes, and the parsed
 * value is a function of the bytes, so equal tags are equal messages; a message built by
 * Compactor (an edited one) has no tag and its values are computed as before.
 */
const tags = new WeakMap<object, string>();

/** The top-level keys whose arrays are histories: `/v1` bodies and Anthropic/Chat (`messages`), Responses (`input`), Gemini (`contents`). */
const HISTORY_KEYS = new Set(['messages', 'input', 'contents']);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string opening at `i`: the next quote not escaped by an odd run of backslashes (each run read once: linear). */
function skipString(text: string, i: number): number {
  let q = i + 1;
  for (;;) {
    q = text.indexOf('"', q);
    if (q < 0) return text.length;
    let k = q;
    while (text.charCodeAt(k - 1) === BACKSLASH) k--;
    if ((q - k) % 2 === 0) return q + 1;
    q++;
  }
}

/** Index just past the value starting at `i` (a string's contents skipped natively; containers by depth). */
function skipValue(text: string, i: number): number {
  const n = text.length;
  const first = text.charCodeAt(i);
  if (first === QUOTE) return skipString(text, i);
  if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
    let j = i;
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c === COMMA || c === CLOSE_ARRAY || c === CLOSE_OBJECT || isSpace(c)) break;
      j++;
    }
    return j;
  }
  let depth = 0;
  let j = i;
  while (j < n) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      j = skipString(text, j);
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

/** The spans (start, end pairs) of the items of the array opening at `i`, and the index past it; null if it is not well formed. */
function itemSpans(text: string, i: number): { spans: number[]; end: number } | null {
  const spans: number[] = [];
  let j = skipSpace(text, i + 1);
  if (text.charCodeAt(j) === CLOSE_ARRAY) return { spans, end: j + 1 };
  for (;;) {
    const end = skipValue(text, j);
    if (end <= j) return null;
    spans.push(j, end);
    j = skipSpace(text, end);
    const c = text.charCodeAt(j);
    if (c === CLOSE_ARRAY) return { spans, end: j + 1 };
    if (c !== COMMA) return null;
    j = skipSpace(text, j + 1);
  }
}

/**
 * The item spans of each history key at the top level of a JSON object text, or null where the
 * text could be read two ways: a top-level key written with an escape (it may spell a history
 * key another way) makes the whole body untagged, a key given twice (the parser keeps the last)
 * leaves that key untagged.
 */
function historySpans(text: string): Map<string, number[] | null> | null {
  const found = new Map<string, number[] | null>();
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) return null;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return found;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return null;
    const keyEnd = skipString(text, i);
    const key = text.slice(i + 1, keyEnd - 1);
    if (key.includes('\\')) return null;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) return null;
    i = skipSpace(text, i + 1);
    if (HISTORY_KEYS.has(key) && text.charCodeAt(i) === OPEN_ARRAY) {
      const items = itemSpans(text, i);
      if (!items) return null;
      found.set(key, found.has(key) ? null : items.spans);
      i = items.end;
    } else {
      if (HISTORY_KEYS.has(key)) found.set(key, null);
      i = skipValue(text, i);
    }
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === CLOSE_OBJECT) return found;
    if (c !== COMMA) return null;
    i = skipSpace(text, i + 1);
  }
}

/**
 * Tags the items of a parsed body's histories from the text it was parsed from (`body` must be
 * `JSON.parse(text)`'s result). One pass over the text outside strings, one SHA-256 over each
 * item's bytes: linear. An item that is not an object, or a history whose items the pass did not
 * count the same as the parser, is left untagged.
 */
export function tagHistories(text: string, body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const spans = historySpans(text);
  if (!spans) return;
  for (const [key, s] of spans) {
    const items = (body as Record<string, unknown>)[key];
    if (s === null || !Array.isArray(items) || items.length * 2 !== s.length) continue;
    for (let k = 0; k < items.length; k++) {
      const item = items[k];
      if (typeof item === 'object' && item !== null) tags.set(item, hash('sha256', text.slice(s[2 * k], s[2 * k + 1]), 'base64'));
    }
  }
}

/** The tag of a message parsed from a request body (undefined for one Compactor built, or not from a body). */
export function tagOf(message: unknown): string | undefined {
  return typeof message === 'object' && message !== null ? tags.get(message) : undefined;
}

/** One name for a list of messages, when every one of them is tagged: the digest of their tags in order. */
export function tagOfList(messages: readonly unknown[]): string | undefined {
  let all = '';
  for (const m of messages) {
    const t = tagOf(m);
    if (t === undefined) return undefined;
    all += t;
  }
  return hash('sha256', all, 'base64');
}

/**
 * The SHA-256 (hex) of `json()`, found by `key` when the content it names was hashed before: `key`
 * must name everything `json()` depends on (a tag and what selects from it). Digests of content are
 * the same for every caller, so the key needs no caller's part.
 */
export function taggedSha256(key: string, json: () => string): string {
  return derived.get(`sha\0${key}`, () => hash('sha256', json(), 'hex'));
}
