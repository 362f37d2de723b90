import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { derived } from './derived.js';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  skipSpace,
  skipString,
  skipValue,
} from './json-bytes.js';

/**
 * Content tags: each message of a request body named by the SHA-256 of its JSON exactly as it
 * arrived, computed in one pass over the body's text while it is at hand (issue 40's "one hashing
 * pass"). An agent sends the same prefix on every call; every value derived from a message alone
 * (its token count, the SHA-256 of one of its parts, of a range of messages) is then found by
 * the tag instead of being stringified and hashed again. A tag names the bytes, and the parsed
 * value is a function of the bytes, so equal tags are equal messages; a message built by
 * Compactor (an edited one) has no tag and its values are computed as before.
 */
const TAG = Symbol('compactor.tag');
/** What a derived tag is computed from, until it is first asked for (most are never: only a range over them needs one). */
const DERIVE = Symbol('compactor.derive');

/**
 * Tags live on the messages themselves, as properties under a symbol that no copy carries: not
 * enumerable (a spread or `Object.assign` of an edited message does not take its tag), and a
 * symbol (JSON and the schemas never see it). A WeakMap holding them cost five times more here
 * (its table is rehashed as a request's messages come and go).
 */
type Tagged = { [TAG]?: string; [DERIVE]?: () => string };

function setTag(o: object, tag: string): void {
  if ((o as Tagged)[TAG] === undefined && Object.isExtensible(o)) Object.defineProperty(o, TAG, { value: tag });
}

/** The top-level keys whose arrays are histories: `/v1` bodies and Anthropic/Chat (`messages`), Responses (`input`), Gemini (`contents`). */
const HISTORY_KEYS = new Set(['messages', 'input', 'contents']);

/**
 * The item spans of each history key at the top level of a JSON object's bytes, or null where the
 * body could be read two ways: a top-level key written with an escape (it may spell a history key
 * another way) makes the whole body untagged, a key given twice (the parser keeps the last)
 * leaves that key untagged.
 */
function historySpans(b: Buffer): Map<string, Scanned | null> | null {
  const found = new Map<string, Scanned | null>();
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return null;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return found;
  for (;;) {
    if (b[i] !== QUOTE) return null;
    const keyEnd = skipString(b, i);
    // A history key is short: a longer one is skipped unread (only checked for escapes).
    const raw = b.subarray(i + 1, keyEnd - 1);
    if (raw.indexOf(BACKSLASH) >= 0) return null;
    const key = raw.length <= 8 ? raw.toString('latin1') : '';
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return null;
    i = skipSpace(b, i + 1);
    if (HISTORY_KEYS.has(key) && b[i] === OPEN_ARRAY) {
      const items = scanHistory(key, b, i);
      if (!items) return null;
      found.set(key, found.has(key) ? null : items);
      i = items.end;
    } else {
      if (HISTORY_KEYS.has(key)) found.set(key, null);
      i = skipValue(b, i);
    }
    i = skipSpace(b, i);
    const c = b[i];
    if (c === CLOSE_OBJECT) return found;
    if (c !== COMMA) return null;
    i = skipSpace(b, i + 1);
  }
}

/** A history tagged before: the bytes of its items (a copy), each item's span in them and its tag. */
interface Seen {
  readonly bytes: Buffer;
  readonly spans: readonly number[];
  readonly tags: readonly (string | undefined)[];
}

/** Bytes of earlier histories kept per thread, and the largest history kept. */
const SEEN_BYTES = 16 * 1024 * 1024;
const SEEN_MAX = 4 * 1024 * 1024;

/**
 * The newest history seen for each first message (by its tag): an agent sends the same prefix on
 * every call, so a history found here is compared byte for byte (natively, 4 KiB at a time) and
 * every item inside the common prefix takes the tag it had, unhashed; only what is new is hashed.
 * Equal bytes are checked, never assumed, so a first message shared by two conversations (or two
 * callers) costs a comparison, never a wrong tag.
 */
const seen = new LRUCache<string, Seen>({
  maxSize: SEEN_BYTES,
  sizeCalculation: (s) => s.bytes.length + 64 * s.tags.length + 64,
});

/** Items hashed, and items whose tag an earlier history gave, since the process started. */
const stats = { hashed: 0, reused: 0 };

/** How the tagging has done (a test counts what a call hashes). */
export function tagStats(): { hashed: number; reused: number } {
  return { ...stats };
}

/** How many leading bytes `a` and `b` share (at most `upTo`). */
function sharedPrefix(a: Buffer, b: Buffer, upTo: number): number {
  const CHUNK = 4096;
  let i = 0;
  while (i < upTo) {
    const end = Math.min(i + CHUNK, upTo);
    if (a.compare(b, i, end, i, end) !== 0) {
      while (i < end && a[i] === b[i]) i++;
      return i;
    }
    i = end;
  }
  return upTo;
}

/** An item's tag: the SHA-256 of its bytes. */
function hashItem(b: Buffer, from: number, to: number): string {
  stats.hashed++;
  return hash('sha256', b.subarray(from, to), 'base64');
}

/** A history's items as scanned: their spans in the body, the tags known without hashing, and where the array ends. */
interface Scanned {
  readonly spans: number[];
  readonly known: (string | undefined)[];
  readonly end: number;
  /** The newest history with the same first message, if any, and its key in `seen`. */
  readonly prev?: Seen | undefined;
  readonly name?: string;
}

/**
 * The items of the history array opening at `i`: its first item hashed (what finds the newest
 * history that began with it), the items inside the bytes it shares with that history taken from
 * it (their spans and tags, neither scanned nor hashed again), the rest scanned; null if it is not
 * well formed.
 */
function scanHistory(key: string, b: Buffer, i: number): Scanned | null {
  const spans: number[] = [];
  const known: (string | undefined)[] = [];
  const j = skipSpace(b, i + 1);
  if (b[j] === CLOSE_ARRAY) return { spans, known, end: j + 1 };
  const firstEnd = skipValue(b, j);
  if (firstEnd <= j) return null;
  const first = hashItem(b, j, firstEnd);
  spans.push(j, firstEnd);
  known.push(first);
  const name = `${key}\0${first}`;
  const prev = seen.get(name);
  let p = firstEnd;
  if (prev) {
    const shared = sharedPrefix(b.subarray(j), prev.bytes, Math.min(b.length - j, prev.bytes.length));
    for (let k = 1; 2 * k + 1 < prev.spans.length && (prev.spans[2 * k + 1] as number) <= shared; k++) {
      spans.push(j + (prev.spans[2 * k] as number), j + (prev.spans[2 * k + 1] as number));
      known.push(prev.tags[k]);
      if (prev.tags[k] !== undefined) stats.reused++;
    }
    p = spans[spans.length - 1] as number;
  }
  for (;;) {
    p = skipSpace(b, p);
    const c = b[p];
    if (c === CLOSE_ARRAY) return { spans, known, end: p + 1, prev, name };
    if (c !== COMMA) return null;
    p = skipSpace(b, p + 1);
    const end = skipValue(b, p);
    if (end <= p) return null;
    spans.push(p, end);
    known.push(undefined);
    p = end;
  }
}

/** Tags one history's items, and keeps it (a copy of its bytes) for the next call when it changed. */
function tagItems(b: Buffer, scanned: Scanned, items: readonly unknown[]): void {
  const { spans: s, known, prev, name } = scanned;
  if (items.length === 0 || name === undefined) return;
  const out: (string | undefined)[] = new Array(items.length);
  let hashed = false;
  for (let k = 0; k < items.length; k++) {
    const item = items[k];
    if (typeof item !== 'object' || item === null) continue;
    let tag = known[k];
    if (tag === undefined) {
      tag = hashItem(b, s[2 * k] as number, s[2 * k + 1] as number);
      hashed = true;
    }
    out[k] = tag;
    setTag(item, tag);
  }
  const from = s[0] as number;
  const to = s[s.length - 1] as number;
  if (prev && !hashed && prev.tags.length === items.length && prev.bytes.length === to - from) return;
  if (to - from > SEEN_MAX) return;
  const spans = new Array<number>(s.length);
  for (let k = 0; k < s.length; k++) spans[k] = (s[k] as number) - from;
  seen.set(name, { bytes: Buffer.from(b.subarray(from, to)), spans, tags: out });
}

/**
 * Tags the items of a parsed body's histories from the bytes it was parsed from (`body` must be
 * what those bytes parse to). One pass over the bytes outside strings; an item's SHA-256 over its
 * bytes unless an earlier history with the same bytes up to its end tagged it: linear. An item
 * that is not an object, or a history whose items the pass did not count the same as the parser,
 * is left untagged.
 */
export function tagHistories(bytes: Uint8Array, body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const spans = historySpans(b);
  if (!spans) return;
  for (const [key, scanned] of spans) {
    const items = (body as Record<string, unknown>)[key];
    if (scanned === null || !Array.isArray(items) || items.length * 2 !== scanned.spans.length) continue;
    tagItems(b, scanned, items);
  }
}

/**
 * Tags `value`, made by a pure function from tagged inputs, by those inputs' tags and the rest of
 * what it was made from (`made`: e.g. an edit's JSON): a message compaction edited is then named
 * like one that came in (what a summary of the compacted history hashes). Never re-tags.
 */
export function tagDerived(value: unknown, made: () => string): void {
  if (typeof value !== 'object' || value === null) return;
  const o = value as Tagged;
  if (o[TAG] === undefined && o[DERIVE] === undefined && Object.isExtensible(o)) {
    Object.defineProperty(o, DERIVE, { value: made, configurable: true });
  }
}

/**
 * Tags `value` by `tag`, the tag `tagDerived` named an earlier value made the same way (from the
 * same tagged inputs and the same rest): found again by what it is made from rather than hashed
 * again. The caller answers for that: `tag` must be what `tagOf` would derive. Never re-tags.
 */
export function tagKnown(value: unknown, tag: string): void {
  if (typeof value === 'object' && value !== null && (value as Tagged)[DERIVE] === undefined) setTag(value, tag);
}

/** The tag of a message parsed from a request body, or derived from tagged ones (undefined for others). */
export function tagOf(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const o = message as Tagged;
  const known = o[TAG];
  if (known !== undefined) return known;
  const made = o[DERIVE];
  if (made === undefined) return undefined;
  const tag = hash('sha256', made(), 'base64');
  delete o[DERIVE];
  setTag(o, tag);
  return tag;
}

/** Whether a message has a tag, or one can be derived (without computing it). */
export function hasTag(message: unknown): boolean {
  return (
    typeof message === 'object' && message !== null && ((message as Tagged)[TAG] ?? (message as Tagged)[DERIVE]) !== undefined
  );
}

/** The tag of a message parsed from a request body only (a derived one is not computed for this). */
export function bodyTagOf(message: unknown): string | undefined {
  return typeof message === 'object' && message !== null ? (message as Tagged)[TAG] : undefined;
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
