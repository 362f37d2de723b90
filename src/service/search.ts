import { setImmediate as turn } from 'node:timers/promises';
import { RE2JS } from 're2js';
import { fieldError } from '../errors.js';
import { type ArtifactKind, CONVERSATION_KIND, SEARCHED_KINDS } from '../history/artifact-kinds.js';
import type { Artifact, RecentLimit } from '../store/types.js';
import type { Caller } from './artifacts.js';
import { escapeText, type RawLine, unescapeLine, valueLines } from './search-scan.js';

/**
 * The MCP `search` tool's work, free of MCP: the caller's newest originals looked through for an
 * exact string or an RE2 regular expression (linear in the text searched, whatever the pattern: no
 * backtracking), within bounds on how many originals and how much text, newest first.
 *
 * An original is read as it is stored (JSON text), never parsed whole: its string values line by
 * line (`search-scan.ts`); an exact string is first looked for in the stored text as JSON escapes
 * it, window by window, and an original without it is not read further. The search yields to the
 * event loop every `PAUSE_EVERY` characters or `PAUSE_MS`, so that the thread it runs on answers
 * other work meanwhile. Where it runs is `/mcp`'s choice (`routes/mcp.ts`): on a worker thread
 * when the store is the worker's own (SQLite, Redis: the 20 MiB read of one original then never
 * blocks the main thread), in line otherwise; one at a time in the process either way.
 */

/** What the search tool is asked. */
export interface SearchQuery {
  readonly text: string;
  readonly regex: boolean;
  /** Only the originals of this conversation (`x-compactor-conversation`), when given. */
  readonly conversation?: string | undefined;
  readonly maxResults: number;
}

/** What it found. */
export interface SearchResult {
  readonly hits: readonly { id: string; kind: string; tool_name: string | null; created_at: string; lines: string[] }[];
  /** Originals looked through, and whether the search stopped at its bounds before the end. */
  readonly scanned: number;
  readonly truncated: boolean;
}

/** At most this many originals, and this much of their content, are looked through by one search. */
export const SEARCH_LIMIT: RecentLimit = { count: 2000, bytes: 32 * 1024 * 1024 };
/** Characters read between two yields to the event loop. */
export const PAUSE_EVERY = 256 * 1024;
/** Milliseconds of searching between two yields, at most (a regular expression reads slower than a string). */
const PAUSE_MS = 10;
const LINES_PER_HIT = 5;
const LINE_CHARS = 240;
/** A line longer than this (stored characters) is read in windows: around a string's match, or in pieces for a regex. */
const LONG_LINE = 64 * 1024;
/** How far a regex piece of a long line overlaps the next: a match longer than this across pieces may be missed. */
const OVERLAP = 4096;

/** A matching line, cut around its match when long; `cutBefore`/`cutAfter`: the line goes on beyond `line`. */
function excerpt(line: string, at: number, length: number, cutBefore = false, cutAfter = false): string {
  if (line.length <= LINE_CHARS && !cutBefore && !cutAfter) return line;
  const start = Math.max(0, at - Math.floor((LINE_CHARS - length) / 2));
  const end = Math.min(line.length, start + Math.max(LINE_CHARS, length));
  return `${start > 0 || cutBefore ? '…' : ''}${line.slice(start, end)}${end < line.length || cutAfter ? '…' : ''}`;
}

/**
 * Finds a query in the lines of one original: the excerpt of a matching line, or undefined; a
 * promise where the line is long enough to be read in pieces, with the pacer's turns between them.
 */
type LineFinder = (json: string, line: RawLine, pacer: Pacer) => string | undefined | Promise<string | undefined>;

/**
 * Whether an original may hold the query, read in windows of `PAUSE_EVERY` characters (each a
 * slice of the stored text, not a copy) with the pacer's turn between them: a 20 MiB original
 * without the string is never one 20 MiB `includes`.
 */
type Admits = (json: string, pacer: Pacer) => Promise<boolean>;

/** How an exact string is found: its escaped form in the stored text, confirmed on the text around it. */
function exactFinder(text: string): { admits: Admits; start: () => LineFinder } {
  const escaped = escapeText(text);
  return {
    admits: async (json, pacer) => {
      // Windows overlap by the string's length less one: an occurrence across two is in the second.
      for (let from = 0; from < json.length; from += PAUSE_EVERY) {
        const to = Math.min(json.length, from + PAUSE_EVERY + escaped.length - 1);
        if (json.slice(from, to).includes(escaped)) return true;
        await pacer.advance(to - from);
      }
      return false;
    },
    start: () => {
      // The next place the escaped string occurs: looked for again only once passed (linear).
      let next = -1;
      return (json, l) => {
        if (next !== Number.POSITIVE_INFINITY && next < l.start) {
          const at = json.indexOf(escaped, l.start);
          next = at < 0 ? Number.POSITIVE_INFINITY : at;
        }
        if (next + escaped.length > l.end) return undefined;
        const long = l.end - l.start > LONG_LINE;
        const from = long ? Math.max(l.start, next - 2 * LINE_CHARS) : l.start;
        const to = long ? Math.min(l.end, next + escaped.length + 2 * LINE_CHARS) : l.end;
        const window = unescapeLine(json.slice(from, to));
        const at = window.indexOf(text);
        return at < 0 ? undefined : excerpt(window, at, text.length, from > l.start, to < l.end);
      };
    },
  };
}

/**
 * How a regular expression is found: on each line's text, a long line in overlapping pieces with
 * the pacer's turn between them (a 20 MiB line of minified JSON is 300 pieces, not one block).
 */
function regexFinder(re: RE2JS): LineFinder {
  const inPiece = (piece: string, cutBefore: boolean, cutAfter: boolean) => {
    const m = re.matcher(piece);
    return m.find() ? excerpt(piece, m.start(), m.end() - m.start(), cutBefore, cutAfter) : undefined;
  };
  const inPieces = async (json: string, l: RawLine, pacer: Pacer) => {
    for (let from = l.start; ; from += LONG_LINE - OVERLAP) {
      const to = Math.min(l.end, from + LONG_LINE);
      const found = inPiece(unescapeLine(json.slice(from, to)), from > l.start, to < l.end);
      if (found !== undefined || to >= l.end) return found;
      await pacer.advance(LONG_LINE - OVERLAP);
    }
  };
  return (json, l, pacer) =>
    l.end - l.start <= LONG_LINE ? inPiece(unescapeLine(json.slice(l.start, l.end)), false, false) : inPieces(json, l, pacer);
}

/** How one query is found. Throws a 400 naming the problem when the pattern is not RE2. */
function finder(q: SearchQuery): { admits: Admits; start: () => LineFinder } {
  if (!q.regex) return exactFinder(q.text);
  let re: RE2JS;
  try {
    re = RE2JS.compile(q.text);
  } catch (error) {
    throw fieldError('CMP_ERR_REQUEST_VALIDATION', 'query', `not a regular expression RE2 accepts: ${(error as Error).message}`);
  }
  const find = regexFinder(re);
  return { admits: async () => true, start: () => find };
}

/**
 * Yields to the event loop once `PAUSE_EVERY` characters were read, or `PAUSE_MS` went by, since
 * the last time. `turns` counts the yields, and `longest` the most characters read between two
 * (tests read them: a search's pauses are its structure, whatever the machine's speed).
 */
export class Pacer {
  private read = 0;
  private since = performance.now();
  turns = 0;
  longest = 0;
  async advance(chars: number): Promise<void> {
    this.read += chars;
    this.longest = Math.max(this.longest, this.read);
    if (this.read < PAUSE_EVERY && performance.now() - this.since < PAUSE_MS) return;
    await turn();
    this.turns++;
    this.read = 0;
    this.since = performance.now();
  }
}

/** The matching lines of one stored original, at most `LINES_PER_HIT`. */
async function matchingLines(json: string, find: LineFinder, pacer: Pacer): Promise<string[]> {
  const out: string[] = [];
  let read = 0;
  for (const l of valueLines(json)) {
    await pacer.advance(l.end - read);
    read = l.end;
    const found = find(json, l, pacer);
    const hit = typeof found === 'object' ? await found : found;
    if (hit !== undefined) out.push(hit);
    if (out.length >= LINES_PER_HIT) break;
  }
  await pacer.advance(json.length - read);
  return out;
}

/** The artifact ids the proxy's records name for a conversation. */
function idsOf(records: readonly Artifact[], conversation: string): Set<string> {
  const ids = new Set<string>();
  for (const r of records) {
    try {
      const value = JSON.parse(r.content) as { conversation?: string; ids?: string[] };
      if (value.conversation === conversation) for (const id of value.ids ?? []) ids.add(id);
    } catch {
      // Not a record of ours: skipped.
    }
  }
  return ids;
}

/** The caller's newest artifacts of `kinds`, within `limit` (the artifact service's `recent`). */
export type RecentArtifacts = (caller: Caller, kinds: readonly ArtifactKind[], limit: RecentLimit) => Promise<Artifact[]>;

/**
 * One search over the caller's originals. `weigh` is told the characters of originals the search
 * loaded, before it reads them (`/mcp` counts them against the in-flight limit; it may reject).
 * Throws a 400 naming the problem when a regular expression is not RE2.
 */
export async function searchOriginals(
  recent: RecentArtifacts,
  q: SearchQuery,
  caller: Caller,
  weigh?: (chars: number) => void | Promise<void>,
  pacer: Pacer = new Pacer(),
): Promise<SearchResult> {
  const find = finder(q);
  const kinds = q.conversation ? [...SEARCHED_KINDS, CONVERSATION_KIND] : SEARCHED_KINDS;
  const all = await recent(caller, kinds, SEARCH_LIMIT);
  await weigh?.(all.reduce((n, a) => n + a.content.length, 0));
  const only = q.conversation
    ? idsOf(
        all.filter((a) => a.kind === CONVERSATION_KIND),
        q.conversation,
      )
    : undefined;
  const candidates = all.filter((a) => a.kind !== CONVERSATION_KIND && (!only || only.has(a.id)));
  const hits: SearchResult['hits'][number][] = [];
  let scanned = 0;
  for (const a of candidates) {
    if (hits.length >= q.maxResults) break;
    scanned++;
    // An original the query cannot be in (an exact string not in its stored text) is not read further.
    const lines = (await find.admits(a.content, pacer)) ? await matchingLines(a.content, find.start(), pacer) : [];
    if (lines.length > 0) {
      hits.push({ id: a.id, kind: a.kind, tool_name: a.tool_name, created_at: new Date(a.created_at).toISOString(), lines });
    }
  }
  const truncated = hits.length >= q.maxResults ? scanned < candidates.length : all.length >= SEARCH_LIMIT.count;
  return { hits, scanned, truncated };
}
