/**
 * The user's own words in a summary (docs/strategies.md, "The user's words"): every message the
 * user typed in a summarized range, verbatim, oldest first, written after the artifact trail
 * whatever the summarizer wrote, and carried over by every later summary that folds this one. So
 * a correction typed at call 5 is still word for word in the history at call 500.
 *
 * What counts as typed: the prose of a real user turn (not a carrier of tool results), without
 * the context blocks agents inject as user text. Such a block is an XML-style element that starts
 * a line and is closed (`<system-reminder>…</system-reminder>`, Codex's
 * `<environment_context>…</environment_context>` and `<user_instructions>`, Claude Code's
 * `<command-name>`, `<local-command-stdout>` and `<bash-stdout>`), and Codex's
 * `# AGENTS.md instructions for …` line before one. What is left, trimmed, is the user's; a message
 * with nothing left (only injected blocks) is not listed, nor is a message of ours (a summary,
 * its request). Every pass is linear in the text's length.
 */

export const USER_WORDS_HEADING = "## The user's words (compactor)";

/** Longest message listed whole; a longer one keeps its head and tail, and names where it is whole. */
export const MAX_WORD_CHARS = 1_200;
const HEAD_CHARS = 800;
const TAIL_CHARS = 300;
/** The most the list holds, in characters: past it, the oldest messages are left out (and counted). */
export const MAX_WORDS_CHARS = 12_000;

/** One message the user typed, as listed: whole, or cut (`of` its length, whole in artifact `id`). */
export interface UserWord {
  readonly text: string;
  readonly cut?: { readonly of: number; readonly id: string | null };
}

/** The list a summary carries: its messages, and how many earlier ones the bound left out. */
export interface UserWords {
  readonly words: readonly UserWord[];
  readonly leftOut: number;
}

export const NO_WORDS: UserWords = { words: [], leftOut: 0 };

const OPEN = /^<([A-Za-z][A-Za-z0-9_-]{0,40})(?=[\s>/])/;
const AGENTS_HEADING = /^# AGENTS\.md instructions for /;
/** Elements searched for a close that none had: at most this many names (the pass stays linear). */
const MAX_UNCLOSED = 32;

/** The element a line opens at `from` (after its indentation): its name, or undefined. */
function opened(text: string, from: number): string | undefined {
  let j = from;
  while (j < text.length && (text[j] === ' ' || text[j] === '\t')) j++;
  return text[j] === '<' ? OPEN.exec(text.slice(j, j + 48))?.[1] : undefined;
}

/**
 * What the user typed in a message's prose: the prose without the context blocks agents inject
 * (closed elements starting a line, and an `# AGENTS.md instructions` line before one), trimmed.
 */
export function typedWords(prose: string): string {
  if (!prose.includes('<')) return prose.trim();
  const out: string[] = [];
  const unclosed = new Set<string>();
  let i = 0;
  while (i < prose.length) {
    const eol = prose.indexOf('\n', i);
    const end = eol < 0 ? prose.length : eol + 1;
    const name = opened(prose, i);
    if (name !== undefined && !unclosed.has(name)) {
      const close = `</${name}>`;
      const at = prose.indexOf(close, i);
      if (at >= 0) {
        i = at + close.length;
        continue;
      }
      if (unclosed.size < MAX_UNCLOSED) unclosed.add(name);
    }
    const line = prose.slice(i, end);
    if (AGENTS_HEADING.test(line)) {
      // The heading goes with the element that follows it (after blank lines).
      let next = end;
      while (next < prose.length && (prose[next] === '\n' || prose[next] === '\r')) next++;
      if (opened(prose, next) !== undefined) {
        i = next;
        continue;
      }
    }
    out.push(line);
    i = end;
  }
  return out.join('').trim();
}

/** A typed message as listed: whole up to `MAX_WORD_CHARS`, else its head and tail, naming the artifact that holds it whole. */
export function wordOf(text: string, id: string | null): UserWord {
  if (text.length <= MAX_WORD_CHARS) return { text };
  const omitted = text.length - HEAD_CHARS - TAIL_CHARS;
  const body = `${text.slice(0, HEAD_CHARS)}\n[… ${omitted} characters left out …]\n${text.slice(-TAIL_CHARS)}`;
  return { text: body, cut: { of: text.length, id } };
}

const header = (w: UserWord) =>
  w.cut
    ? `- user, ${w.text.length} of ${w.cut.of} chars (head and tail; whole in ${w.cut.id ?? 'no artifact: not stored'}):`
    : `- user, ${w.text.length} chars:`;
const ENTRY =
  /^- user, (\d{1,9})(?: of (\d{1,9}) chars \(head and tail; whole in (art_[0-9a-f]{24}|no artifact: not stored)\)| chars):$/;
const TRAILER = /^\(the user's words above: (\d{1,9}) messages?, (\d{1,9}) chars(?:; (\d{1,9}) earlier left out)?\)$/;

/**
 * The earlier list and the range's messages in one list, oldest first, within `MAX_WORDS_CHARS`
 * (the oldest left out first, counted).
 */
export function foldWords(earlier: UserWords, added: readonly UserWord[]): UserWords {
  const all = [...earlier.words, ...added];
  let total = 0;
  let from = all.length;
  while (from > 0 && total + (all[from - 1] as UserWord).text.length <= MAX_WORDS_CHARS)
    total += (all[--from] as UserWord).text.length;
  return { words: all.slice(from), leftOut: earlier.leftOut + from };
}

/** The list as written at the end of a summary ('' when empty): heading, entries, and a last line that measures them. */
export function renderWords(list: UserWords): string {
  if (list.words.length === 0) return '';
  const block = [USER_WORDS_HEADING, ...list.words.flatMap((w) => [header(w), w.text])].join('\n');
  const n = list.words.length;
  const left = list.leftOut > 0 ? `; ${list.leftOut} earlier left out` : '';
  return `${block}\n(the user's words above: ${n} message${n === 1 ? '' : 's'}, ${block.length} chars${left})`;
}

/**
 * A summary's text cut at its list of the user's words: the text before it (prose and trail) and
 * the list, read back exactly (each entry by its length). A text whose end is not such a list
 * (written before the list was, or edited) is all prose: `NO_WORDS`.
 */
export function splitWords(summary: string): { rest: string; list: UserWords } {
  const nl = summary.lastIndexOf('\n');
  const trailer = nl < 0 ? null : TRAILER.exec(summary.slice(nl + 1));
  if (!trailer) return { rest: summary, list: NO_WORDS };
  const length = Number(trailer[2]);
  const start = nl - length;
  if (start < 0 || !summary.startsWith(`${USER_WORDS_HEADING}\n`, start) || (start > 0 && summary[start - 1] !== '\n'))
    return { rest: summary, list: NO_WORDS };
  const words = readEntries(summary, start + USER_WORDS_HEADING.length + 1, nl);
  if (!words || words.length !== Number(trailer[1])) return { rest: summary, list: NO_WORDS };
  return { rest: summary.slice(0, start).trimEnd(), list: { words, leftOut: Number(trailer[3] ?? 0) } };
}

/** The entries between `from` and `to`, each a header line and exactly the length it names; undefined when they do not parse. */
function readEntries(text: string, from: number, to: number): UserWord[] | undefined {
  const words: UserWord[] = [];
  let at = from;
  while (at < to) {
    const eol = text.indexOf('\n', at);
    if (eol < 0 || eol >= to) return undefined;
    const m = ENTRY.exec(text.slice(at, eol));
    if (!m) return undefined;
    const length = Number(m[1]);
    const end = eol + 1 + length;
    if (end > to || (end < to && text[end] !== '\n')) return undefined;
    const body = text.slice(eol + 1, end);
    const id = m[3] === undefined || m[3].startsWith('no artifact') ? null : m[3];
    words.push(m[2] === undefined ? { text: body } : { text: body, cut: { of: Number(m[2]), id } });
    at = end + 1;
  }
  return words;
}
