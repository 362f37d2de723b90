import { wordFacts } from './fact-words.js';

/**
 * A run longer than this (a base64 blob, minified code, `a-a-a-…`) is skipped whole: no
 * identifier is that long, and what it holds is not something a summary would quote.
 */
const MAX_RUN = 512;
/** A fact is at most this long; a longer URL or path is not an identifier anyone would quote. */
export const MAX_FACT = 200;

const RUN_CHAR = new Uint8Array(128).map((_, c) =>
  (c >= 48 && c <= 57) ||
  (c >= 65 && c <= 90) ||
  (c >= 97 && c <= 122) ||
  c === 95 ||
  c === 64 ||
  c === 46 ||
  c === 47 ||
  c === 45 ||
  c === 126 ||
  c === 43
    ? 1
    : 0,
);
const isRunChar = (code: number) => code < 128 && RUN_CHAR[code] === 1;

/** Characters that end a URL (the old pattern's, plus the backtick and `|` of Markdown). */
const URL_END = new Set([...' \t\n\r\f\v"\'<>()[]`|'].map((c) => c.charCodeAt(0)));
const isUrlEnd = (code: number) =>
  URL_END.has(code) ||
  code === 0x85 ||
  code === 0xa0 ||
  code === 0x1680 ||
  (code >= 0x2000 && code <= 0x200a) ||
  code === 0x2028 ||
  code === 0x2029 ||
  code === 0x202f ||
  code === 0x205f ||
  code === 0x3000 ||
  code === 0xfeff;

const isWordCode = (code: number) =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;

/** Where `http` or `https` starts when a run ends with it at a word boundary, else -1. */
function schemeStart(text: string, start: number, end: number): number {
  for (const scheme of ['https', 'http']) {
    const at = end - scheme.length;
    if (at >= start && text.startsWith(scheme, at) && (at === start || !isWordCode(text.charCodeAt(at - 1)))) return at;
  }
  return -1;
}

/** End of a fact without the trailing `.,;:` that punctuate the sentence around it. */
export function trimEnd(text: string, start: number, end: number): number {
  let e = end;
  while (e > start && '.,;:'.includes(text.charAt(e - 1))) e--;
  return e;
}

/**
 * Emits every fact of `text`, in reading order, in one left-to-right pass: linear in its length for
 * any input, since no pattern runs over more than one bounded run and none can backtrack. Never
 * throws.
 *
 * The text is cut into runs of the characters paths and identifiers are made of (`[\w@./~+-]`);
 * every other character (whitespace, quotes, brackets, braces, commas, colons, `=`, non-ASCII…)
 * ends a run. A run that ends in `http://` or `https://` at a word boundary starts a URL, which
 * goes on until whitespace, a quote, a bracket, `<`, `>`, a backtick or `|`. Within a run: a path
 * (at least one directory and a file name with an extension), then file names with a known
 * extension and the run's words (`wordFacts`; not with `words` false: paths and URLs only). Numbers with a unit may continue past their run
 * (`12 ms`, `50%`).
 */
export function scanFacts(text: string, emit: (fact: string) => void, words = true): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    while (i < n && !isRunChar(text.charCodeAt(i))) i++;
    const start = i;
    while (i < n && isRunChar(text.charCodeAt(i))) i++;
    if (i === start) break;
    const scheme = text.startsWith('://', i) ? schemeStart(text, start, i) : -1;
    let urlEnd = i + 3;
    while (scheme >= 0 && urlEnd < n && !isUrlEnd(text.charCodeAt(urlEnd))) urlEnd++;
    if (scheme < 0 || urlEnd === i + 3) {
      runFacts(text, start, i, emit, words);
      continue;
    }
    if (scheme > start) runFacts(text, start, scheme, emit, words);
    const end = trimEnd(text, scheme, urlEnd);
    if (end - scheme <= MAX_FACT) emit(text.slice(scheme, end));
    i = urlEnd;
  }
}

/** A file name's extension: 1 to 8 letters or digits after a last `.` that is not the first character. */
function extensionOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  const ext = name.slice(dot + 1);
  return dot >= 1 && ext.length >= 1 && ext.length <= 8 && /^[A-Za-z0-9]+$/.test(ext) ? ext : undefined;
}

/**
 * The longest path at the start of `run` (`[\w@./~+-]` only, no `//`): an optional leading `/`, at
 * least one directory, and a last segment with an extension. Returns its length, or 0.
 */
function pathLength(run: string): number {
  let from = run.startsWith('/') ? 1 : 0;
  let dirs = 0;
  let best = 0;
  for (let j = from; j <= run.length; j++) {
    if (j < run.length && run.charCodeAt(j) !== 47) continue;
    if (j === from) break;
    if (dirs > 0 && extensionOf(run.slice(from, j)) !== undefined) best = j;
    dirs++;
    from = j + 1;
  }
  return best;
}

/** The facts of one run of `[\w@./~+-]` characters, [start, end) in `text`. */
function runFacts(text: string, start: number, end: number, emit: (fact: string) => void, words: boolean): void {
  if (end - start > MAX_RUN) return;
  // Facts end at a word character: `src/app.ts.` or `a/b.py-` end a sentence or a range.
  let e = end;
  while (e > start && !isWordCode(text.charCodeAt(e - 1))) e--;
  const run = text.slice(start, e);
  // `a//b/c.ts`: a doubled slash starts the path over (`/b/c.ts`), as a file system reads it.
  let from = 0;
  while (from < run.length) {
    let k = run.indexOf('//', from);
    if (k < 0) k = run.length;
    const piece = run.slice(from, k);
    const length = piece.includes('/') ? pathLength(piece) : 0;
    if (length > 0 && length <= MAX_FACT) emit(piece.slice(0, length));
    // The path's own file name is no fact of its own (the path holds it); its words (a UUID, a hex
    // id, an error name) are.
    if (words) wordFacts(text, start + from, start + k, start + from + length, emit);
    while (run.charCodeAt(k + 1) === 47) k++;
    from = k;
  }
}
