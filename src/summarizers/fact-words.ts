/**
 * The facts inside one bounded run of `[\w@./-]` characters that is not a path: file names with a
 * known extension, UUIDs, `*Error`/`*Exception` names, CONSTANT_NAMES, prefixed ids, hex strings
 * and numbers with a unit. Every test is anchored to one segment or word and cannot backtrack
 * (each pattern has a single way to match), so the work is linear in the run's length.
 */
const EXTENSIONS = new Set(
  'py ts tsx js jsx mjs cjs json yaml yml toml md rs go java kt rb php c h cc cpp hpp cs sh sql html css txt lock cfg ini'.split(
    ' ',
  ),
);

/** Units of measured numbers; none is a prefix of another that could also end at a non-letter. */
const UNITS = ['tokens', 'req/s', 'sec', 'min', 'KiB', 'MiB', 'GiB', 'KB', 'MB', 'GB', 'ms', 's', 'h', '%'];

const WORD_CLASSES = [
  /^[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}$/,
  /^(?:call|toolu|msg|fc|rs|req|run|art)_[A-Za-z0-9]{6,}$/,
  /^[0-9a-f]{12,40}$/,
];
const LETTERS = /^[A-Z][A-Za-z]*$/;
const HEX = /^[0-9a-fA-F]+$/;
const UUID_PARTS = [8, 4, 4, 4, 12];

const isDigit = (code: number) => code >= 48 && code <= 57;
const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const isWord = (code: number) => isDigit(code) || isLetter(code) || code === 95;

/** Whether a word starting with `first` and `length` long could be of any class (most are not). */
function mayBeFact(first: number, length: number): boolean {
  const upper = first >= 65 && first <= 90;
  const hex = (first >= 48 && first <= 57) || (first >= 97 && first <= 102);
  return upper || (hex && length >= 12) || 'ctmfra'.includes(String.fromCharCode(first));
}

function isError(word: string): boolean {
  const suffix = word.endsWith('Error') ? 5 : word.endsWith('Exception') ? 9 : 0;
  return suffix > 0 && word.length > suffix && LETTERS.test(word);
}

/** A file name with a known extension (`app.ts`, `my-file.test.ts`), its leading dashes aside. */
function fileName(text: string, start: number, end: number): string | undefined {
  // The known extensions are 1 to 4 characters: look no further back (never past `start`).
  let dot = end - 2;
  while (dot > start && dot >= end - 5 && text.charCodeAt(dot) !== 46) dot--;
  if (dot <= start || text.charCodeAt(dot) !== 46 || !EXTENSIONS.has(text.slice(dot + 1, end))) return undefined;
  let from = start;
  while (text.charCodeAt(from) === 45) from++;
  for (let k = from; k < dot; k++) if (isWord(text.charCodeAt(k))) return text.slice(from, end);
  return undefined;
}

/** A number with its unit at a word boundary `p` (`12 ms`, `3.5GB`, `50%`), as its end, or -1. */
function numberEnd(text: string, p: number): number {
  let q = p;
  while (isDigit(text.charCodeAt(q))) q++;
  if (text.charCodeAt(q) === 46 && isDigit(text.charCodeAt(q + 1))) {
    q += 2;
    while (isDigit(text.charCodeAt(q))) q++;
  }
  const space = text.charAt(q);
  for (const at of space === ' ' || space === '\t' || space === '\u00a0' || space === '\u202f' ? [q, q + 1] : [q]) {
    for (const unit of UNITS) {
      if (text.startsWith(unit, at) && !isLetter(text.charCodeAt(at + unit.length))) return at + unit.length;
    }
  }
  return -1;
}

/** The words of [start, end) split at `-`, with UUIDs (five parts) taken whole. */
function dashWordFacts(text: string, start: number, end: number, emit: (fact: string) => void): void {
  const parts: number[] = [];
  let from = start;
  for (let k = start; k <= end; k++) {
    if (k < end && text.charCodeAt(k) !== 45) continue;
    parts.push(from, k);
    from = k + 1;
  }
  for (let p = 0; p < parts.length; p += 2) {
    let uuid = p + 2 * UUID_PARTS.length <= parts.length;
    for (let u = 0; uuid && u < UUID_PARTS.length; u++) {
      const s = parts[p + 2 * u] as number;
      const e = parts[p + 2 * u + 1] as number;
      uuid = e - s === UUID_PARTS[u] && HEX.test(text.slice(s, e));
    }
    if (uuid) {
      emit(text.slice(parts[p] as number, parts[p + 2 * UUID_PARTS.length - 1] as number));
      p += 2 * UUID_PARTS.length - 2;
      continue;
    }
    const s = parts[p] as number;
    const e = parts[p + 1] as number;
    if (e - s >= 3 && mayBeFact(text.charCodeAt(s), e - s)) {
      const word = text.slice(s, e);
      if (isError(word) || WORD_CLASSES.some((pattern) => pattern.test(word))) emit(word);
    }
  }
}

/**
 * Emits the facts of [start, end) of `text`, a run of `[\w@./-]` at most a few hundred long; file
 * names only from `files` on (before it, a path already holds them).
 */
export function wordFacts(text: string, start: number, end: number, files: number, emit: (fact: string) => void): void {
  let segment = start;
  for (let k = start; k <= end; k++) {
    const code = k < end ? text.charCodeAt(k) : 47;
    if (code !== 47 && code !== 64) continue;
    if (k > segment) {
      const file = segment >= files ? fileName(text, segment, k) : undefined;
      if (file) emit(file);
      let word = segment;
      for (let j = segment; j <= k; j++) {
        if (j < k && text.charCodeAt(j) !== 46) continue;
        if (j > word) dashWordFacts(text, word, j, emit);
        word = j + 1;
      }
      for (let p = segment; p < k; p++) {
        if (!isDigit(text.charCodeAt(p)) || (p > 0 && isWord(text.charCodeAt(p - 1)))) continue;
        const e = numberEnd(text, p);
        if (e > 0) {
          emit(text.slice(p, e));
          p = e - 1;
        }
      }
    }
    segment = k + 1;
  }
}
