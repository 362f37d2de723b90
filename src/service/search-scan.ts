/**
 * Reading a stored original (JSON text) for a search without parsing it: its string values, line
 * by line, still escaped as they are stored (object keys and the JSON around the strings are
 * skipped). One pass, linear in the text, nothing built but the lines asked for; a 20 MiB original
 * is never held twice, and the caller may stop or yield between lines.
 */

/** A line of one string value: `json.slice(start, end)`, escaped as stored. */
export interface RawLine {
  readonly start: number;
  readonly end: number;
}

/**
 * The lines of the string starting at `open` (its opening quote), split at the escape `\n`, and
 * where it ends (the index of its closing quote, or the text's end). Jumps from backslash to
 * backslash: a long string without escapes is read at the speed of `indexOf`.
 */
function* stringLines(json: string, open: number): Generator<RawLine, number> {
  let start = open + 1;
  let i = start;
  // The next quote is looked for again only once passed (it was escaped): each character is read once.
  let close = -1;
  for (;;) {
    if (close < i) {
      const quote = json.indexOf('"', i);
      close = quote < 0 ? json.length : quote;
    }
    const slash = json.indexOf('\\', i);
    if (slash < 0 || slash > close) {
      yield { start, end: close };
      return close;
    }
    if (json[slash + 1] === 'n') {
      yield { start, end: slash };
      start = slash + 2;
    }
    i = slash + 2;
  }
}

/**
 * The lines of every string value of `json`, in order, as ranges of it; object keys are not
 * values and are skipped (as is everything outside the strings: numbers, literals, punctuation).
 * A generator: the caller may stop, or yield to the event loop, between any two lines.
 */
export function* valueLines(json: string): Generator<RawLine> {
  // Whether each open container is an object, and whether the next string in the innermost is a key.
  const objects: boolean[] = [];
  let key = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      const lines = stringLines(json, i);
      for (let step = lines.next(); ; step = lines.next()) {
        if (step.done) {
          i = step.value;
          break;
        }
        if (!key) yield step.value;
      }
      key = false;
    } else if (c === '{' || c === '[') {
      objects.push(c === '{');
      key = c === '{';
    } else if (c === '}' || c === ']') {
      objects.pop();
      key = false;
    } else if (c === ',') {
      key = objects.at(-1) === true;
    }
  }
}

const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', '/': '/' };

/**
 * The text of an escaped line (or a piece of one): JSON's escapes undone. A piece cut inside an
 * escape keeps what it cannot read as it is. Linear.
 */
export function unescapeLine(raw: string): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  let from = 0;
  for (let i = raw.indexOf('\\'); i >= 0 && i < raw.length; i = raw.indexOf('\\', from)) {
    out += raw.slice(from, i);
    const e = raw[i + 1] ?? '';
    if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(raw.slice(i + 2, i + 6))) {
      out += String.fromCharCode(Number.parseInt(raw.slice(i + 2, i + 6), 16));
      from = i + 6;
    } else if (e in ESCAPES) {
      out += ESCAPES[e];
      from = i + 2;
    } else {
      out += '\\';
      from = i + 1;
    }
  }
  return out + raw.slice(from);
}

/** `text` escaped as `JSON.stringify` stores it inside a string: what to look for in the stored text. */
export function escapeText(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
