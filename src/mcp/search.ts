import { RE2JS } from 're2js';
import { fieldError } from '../errors.js';
import type { Caller } from '../service/artifacts.js';
import type { Artifact, ArtifactStore } from '../store/types.js';
import { originalText } from './render.js';
import type { SearchQuery, SearchResult } from './server.js';

/**
 * The MCP `search` tool's work: the caller's newest originals looked through for an exact string
 * or an RE2 regular expression (linear in the text searched, whatever the pattern: no
 * backtracking), within bounds on how many originals and how much text, newest first.
 */

/** The kinds of originals a model may look for (not the service's own records). */
export const SEARCHED_KINDS = [
  'tool_result',
  'tool_result_truncated',
  'tool_input',
  'thinking',
  'summary_range',
  'section_range',
  'window_range',
];

/** What the proxy records of a conversation: the artifacts its upstream history names (`conversationIndex`). */
export const CONVERSATION_KIND = 'proxy_conversation';

/** At most this many originals, and this much of their content, are looked through by one search. */
export const SEARCH_LIMIT = { count: 2000, bytes: 32 * 1024 * 1024 };
const LINES_PER_HIT = 5;
const LINE_CHARS = 240;

/** A matching line, cut around its match when long. */
function excerpt(line: string, at: number, length: number): string {
  if (line.length <= LINE_CHARS) return line;
  const start = Math.max(0, at - Math.floor((LINE_CHARS - length) / 2));
  const end = Math.min(line.length, start + Math.max(LINE_CHARS, length));
  return `${start > 0 ? '…' : ''}${line.slice(start, end)}${end < line.length ? '…' : ''}`;
}

/** The lines of a text that match, at most `LINES_PER_HIT`, each at most `LINE_CHARS` long. Linear in the text. */
function matchingLines(text: string, find: (line: string) => { at: number; length: number } | undefined): string[] {
  const out: string[] = [];
  let start = 0;
  while (start <= text.length && out.length < LINES_PER_HIT) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(start, end);
    const hit = find(line);
    if (hit) out.push(excerpt(line, hit.at, hit.length));
    if (nl < 0) break;
    start = nl + 1;
  }
  return out;
}

/** How one query finds itself in a line. Throws a 400 naming the problem when the pattern is not RE2. */
function finder(q: SearchQuery): (line: string) => { at: number; length: number } | undefined {
  if (!q.regex) {
    return (line) => {
      const at = line.indexOf(q.text);
      return at < 0 ? undefined : { at, length: q.text.length };
    };
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(q.text);
  } catch (error) {
    throw fieldError('CMP_ERR_REQUEST_VALIDATION', 'query', `not a regular expression RE2 accepts: ${(error as Error).message}`);
  }
  return (line) => {
    if (!re.test(line)) return undefined;
    const m = re.matcher(line);
    return m.find() ? { at: m.start(), length: m.end() - m.start() } : { at: 0, length: 0 };
  };
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

/** A search over the store's originals, for one caller at a time. */
export function artifactSearch(store: ArtifactStore, now: () => number) {
  return async (q: SearchQuery, caller: Caller): Promise<SearchResult> => {
    const find = finder(q);
    const kinds = q.conversation ? [...SEARCHED_KINDS, CONVERSATION_KIND] : SEARCHED_KINDS;
    const all = await store.recent(caller.scope, kinds, now(), SEARCH_LIMIT);
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
      let content: unknown;
      try {
        content = JSON.parse(a.content);
      } catch {
        continue;
      }
      const lines = matchingLines(originalText(content), find);
      if (lines.length > 0) {
        hits.push({ id: a.id, kind: a.kind, tool_name: a.tool_name, created_at: new Date(a.created_at).toISOString(), lines });
      }
    }
    const truncated = hits.length >= q.maxResults ? scanned < candidates.length : all.length >= SEARCH_LIMIT.count;
    return { hits, scanned, truncated };
  };
}
