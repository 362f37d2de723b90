import { createHmac, timingSafeEqual } from 'node:crypto';
import { derived } from '../tokens/derived.js';
import { keyTag, LOOKUP_MAX_CHARS } from './address.js';

/**
 * The markers a later call honours, written and verified in one place: the first line of a rolling
 * summary, of a section summary and of a QA-merged header, and the tool-result and tool-input
 * placeholders compaction writes. Each carries a MAC (`mac=` 16 hex digits: HMAC-SHA256 under a
 * key derived from the installation secret and the caller's scope, over what the marker claims and
 * the whole text it vouches for). A marker is ours only when its MAC verifies: anything else
 * (forged, quoted, truncated, edited, or another caller's) is the user's text, summarized,
 * compacted, counted and restored like any other. Nobody reads these markers but through `Markers`.
 */

/** Where a summary of ours sits: its own message, a request/answer pair, or joined to a neighbour. */
export type SummaryPlacement = 'own' | 'pair' | 'joined' | 'joined-string';

export interface SummaryMarker {
  /** The artifact holding the summarized range, or null with `store: none`. */
  id: string | null;
  placement: SummaryPlacement;
  /** How many original messages the summary stands for, earlier summaries included. */
  covers: number;
  /** The summary's text without its marker line. */
  text: string;
}

/** A section summary or a QA-merged header: the range it stands for (null with `store: none`) and its text. */
export interface RangeMarker {
  id: string | null;
  text: string;
}

/** A placeholder's place: a tool result's text, or a tool call's arguments (their JSON). */
export type PlaceholderSite = 'result' | 'call';

/**
 * `binding` below: the call a placeholder belongs to (`Binding`, history/bindings.ts: the call's
 * id, tool, arguments and rank among identical calls), which its MAC covers with the site's text.
 */

/** Writes and verifies one caller's markers. Each read is one syntactic match and, on a match, one MAC over the text. */
export interface Markers {
  /**
   * Signs the placeholders of one site: `text` holds `[compactor:<id>]` (`cleared` for `id`
   * null) where compaction put it, amid whatever else (a truncated result's head and tail); each
   * becomes `[compactor:<id> mac=…]`, the MAC over the site, the call's binding and the whole text.
   */
  placeholder(site: PlaceholderSite, binding: string, id: string | null, text: string): string;
  /**
   * The placeholder a site's text carries when one of its markers verifies for this site and
   * binding: the artifact it names (null for a cleared one). Undefined for anything else: a quote,
   * a forgery, a placeholder moved to another call or with text added, another caller's.
   */
  readPlaceholder(site: PlaceholderSite, binding: string, text: string): { id: string | null } | undefined;
  /** A call's arguments with the placeholders of its top-level values signed, over the arguments' JSON (as `placeholder` for a `call` site). */
  placeholderArgs(binding: string, id: string | null, args: Record<string, unknown>): Record<string, unknown>;
  /** A summary's whole text: its signed first line, then `body`. */
  summary(id: string | null, placement: SummaryPlacement, covers: number, body: string): string;
  /** The summary a text is, when it starts with a marker that verifies; undefined for anything else. */
  readSummary(text: string | undefined): SummaryMarker | undefined;
  /**
   * A window marker's whole text: what fit's window removed (`covers` messages, the earlier window
   * markers it folded included), where it stands (`own` message, or `joined` to a neighbour), and
   * the artifact holding the removed range (null with `store: none`). Read like a summary.
   */
  window(id: string | null, placement: 'own' | 'joined' | 'joined-string', covers: number, body: string): string;
  /** The window marker a text is, when it starts with one that verifies; undefined for anything else. */
  readWindow(text: string | undefined): SummaryMarker | undefined;
  /** A section summary's whole text (its message's, or its synthetic tool result's). */
  section(id: string | null, body: string): string;
  readSection(text: string | undefined): RangeMarker | undefined;
  /** A QA-merged header's whole text: it names the merged span's artifact. */
  qaHeader(id: string | null, body: string): string;
  readQaHeader(text: string | undefined): RangeMarker | undefined;
  /**
   * The tool the hints this signer writes name (`recallHint`), or undefined: hints then name the
   * artifact plainly. Reading accepts every wording, whatever this is.
   */
  readonly recallTool: string | undefined;
  /**
   * A name of this signer's key (a digest of it, 32 hex digits: it tells nothing of the key): two
   * signers with one name write the same markers, whatever their recall tool. What a cache of
   * signed texts is keyed by, so that no caller finds another's.
   */
  readonly name: string;
  /** The same caller's signer, its hints naming `tool` (undefined: plain). */
  withRecallTool(tool: string | undefined): Markers;
}

const ID = '(art_[0-9a-f]{24}|none)';
const MAC = 'mac=([0-9a-f]{16})';
/** What follows a marker on its line: `recallHint` in any of its wordings, or nothing (a marker written before it). */
const HINT = '([^\\n]{0,200})';
const SUMMARY_LINE = new RegExp(
  `^\\[compactor:summary ${ID} (own|pair|joined|joined-string) covers=(\\d{1,15}) ${MAC}\\]${HINT}\\n`,
);
const WINDOW_LINE = new RegExp(`^\\[compactor:window ${ID} (own|joined|joined-string) covers=(\\d{1,15}) ${MAC}\\]${HINT}\\n`);
const SECTION_LINE = new RegExp(`^\\[compactor:section-summary ${ID} ${MAC}\\]${HINT}\\n`);
const QA_LINE = new RegExp(`^\\[compactor:qa-header ${ID} ${MAC}\\]${HINT}\\n`);

/**
 * What a summary's, section summary's or QA header's marker line ends with when it names an
 * artifact: where the messages it replaced are. With `tool` (a recall tool the request offers),
 * the tool that gives them back; without, the artifact id plainly. It depends on the id and the
 * tool only (a prompt cache keeps it). A line whose tail is not one of these wordings for its id
 * (or nothing) does not verify; the MAC does not cover the tail, so a marker stays ours whichever
 * wording it was written with, and is never rewritten for another.
 */
export function recallHint(id: string | null, tool?: string): string {
  if (!id) return '';
  return tool
    ? ` (the messages it replaces: call the \`${tool}\` tool with ${id})`
    : ` (the messages it replaces are stored as ${id})`;
}

/** A hint that names a tool, any tool (`RECALL_TOOL_NAME`), and the id it ends with. */
const TOOL_HINT = /^ \(the messages it replaces: call the `[A-Za-z0-9_.:-]{1,64}` tool with (art_[0-9a-f]{24})\)$/;

/** Whether a marker line's tail is a wording `recallHint` writes for its id, or empty (written before the hint was). */
const hintFits = (tail: string | undefined, id: string) =>
  tail === '' || (id !== 'none' && (tail === recallHint(id) || TOOL_HINT.exec(tail ?? '')?.[1] === id));
/**
 * The placeholder compaction writes where an original was (unsigned: `Markers.placeholder` signs
 * the text it sits in): `[compactor:art_<24 hex>]` names the artifact holding the original
 * (expand restores it), `[compactor:cleared]` marks a lossy clearing (`store: none`).
 */
export function placeholderMarker(id: string | null): string {
  return `[compactor:${id ?? 'cleared'}]`;
}

/** Whether a text may hold a signed marker of ours (none can without this): what every reader checks first. */
export const mayBeSigned = (text: string): boolean => text.includes(' mac=');

/** A placeholder marker, signed or not (`g`: every one in a text). */
const PLACEHOLDER = /\[compactor:(art_[0-9a-f]{24}|cleared)( mac=[0-9a-f]{16})?\]/g;
/** What a text is signed over: its placeholders without their MACs (whoever wrote them). */
const unsigned = (text: string) => (text.includes('[compactor:') ? text.replace(PLACEHOLDER, '[compactor:$1]') : text);

/**
 * The artifact ids of the placeholders in a text that carry a MAC, verified or not (for saying
 * which ones a history holds that do not verify where they are); `cleared` ones name none.
 */
export function signedPlaceholderIds(text: string): string[] {
  if (!mayBeSigned(text)) return [];
  return [...text.matchAll(PLACEHOLDER)].filter((m) => m[2] !== undefined && m[1] !== 'cleared').map((m) => m[1] as string);
}

/** A summary's, section summary's or QA header's marker that names an artifact and carries a MAC. */
const SIGNED_RANGE = /\[compactor:(?:summary|section-summary|qa-header) (art_[0-9a-f]{24})[^\]\n]{0,60}? mac=[0-9a-f]{16}\]/g;

/**
 * The artifact ids of the summary, section-summary and QA-header markers in a text that carry a
 * MAC, verified or not: after an expand, those still there did not verify (another key's or
 * another installation secret's) unless their range was missing.
 */
function signedRangeIds(text: string): string[] {
  if (!mayBeSigned(text)) return [];
  return [...text.matchAll(SIGNED_RANGE)].map((m) => m[1] as string);
}

/**
 * The ids of the signed summary markers still in a history after its summaries were expanded:
 * each did not verify (another key's, or another installation secret's after Redis lost it,
 * issue 39), unless its range was `missing`. One pass over each message that holds a MAC.
 */
export function unverifiedRanges(messages: readonly unknown[], missing: ReadonlySet<string>): Set<string> {
  const ids = new Set<string>();
  for (const message of messages) {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    for (const id of signedRangeIds(text ?? '')) if (!missing.has(id)) ids.add(id);
  }
  return ids;
}

/** Any marker of ours, up to its MAC (bounded: a marker line is short). */
const SIGNED = /(\[compactor:[^\]\n]{1,120}?) mac=[0-9a-f]{16}\]/g;

/**
 * A text as a summarizer should read it: every marker's MAC taken out (`[compactor:art_… mac=…]`
 * becomes `[compactor:art_…]`). A MAC means nothing to a reader and is no fact worth keeping.
 */
export function withoutMacs(text: string): string {
  return mayBeSigned(text) ? text.replace(SIGNED, '$1]') : text;
}

/**
 * The markers of one scope, keyed by the installation secret and the scope (as artifact ids are):
 * the same secret, scope and text always give the same bytes, and a marker written for one caller
 * never verifies for another. Never throws; a text that does not verify reads as undefined.
 */
export function markers(secret: string, scope: string, recallTool?: string): Markers {
  const key = createHmac('sha256', secret).update(`compactor-marker\0${scope}`).digest();
  const keyName = keyTag(key);
  // A marker verified on one call is verified again on every later one: the MAC of a short text
  // is found under this caller's key, a long one's computed (cheaper than finding it, `LOOKUP_MAX_CHARS`).
  const mac = (kind: string, claims: string, body: string) => {
    const make = () => createHmac('sha256', key).update(`${kind}\0${claims}\0`).update(body).digest('hex').slice(0, 16);
    return body.length <= LOOKUP_MAX_CHARS ? derived.get(`mac\0${keyName}\0${kind}\0${claims}\0${body}`, make) : make();
  };
  const verified = (kind: string, claims: string, body: string, given: string) =>
    timingSafeEqual(Buffer.from(mac(kind, claims, body)), Buffer.from(given));
  const idOf = (id: string | null) => id ?? 'none';
  const readId = (id: string) => (id === 'none' ? null : id);
  const range = (kind: 'section' | 'qa', line: RegExp, text: string | undefined): RangeMarker | undefined => {
    const m = text === undefined ? null : line.exec(text);
    if (!m || text === undefined || !hintFits(m[3], m[1] as string)) return undefined;
    const body = text.slice(m[0].length);
    return verified(kind, m[1] as string, body, m[2] as string) ? { id: readId(m[1] as string), text: body } : undefined;
  };
  const hint = (id: string | null) => recallHint(id, recallTool);
  /** A summary or window marker: its line, then the body its MAC covers with what the line claims. */
  const placed = (kind: 'summary' | 'window', line: RegExp, text: string | undefined): SummaryMarker | undefined => {
    const m = text === undefined ? null : line.exec(text);
    if (!m || text === undefined || !hintFits(m[5], m[1] as string)) return undefined;
    const claims = `${m[1]} ${m[2]} covers=${m[3]}`;
    const body = text.slice(m[0].length);
    if (!verified(kind, claims, body, m[4] as string)) return undefined;
    return { id: readId(m[1] as string), placement: m[2] as SummaryPlacement, covers: Number(m[3]), text: body };
  };
  return {
    recallTool,
    name: keyName,
    withRecallTool: (tool) => markers(secret, scope, tool),
    summary(id, placement, covers, body) {
      const claims = `${idOf(id)} ${placement} covers=${covers}`;
      return `[compactor:summary ${claims} mac=${mac('summary', claims, body)}]${hint(id)}\n${body}`;
    },
    readSummary: (text) => placed('summary', SUMMARY_LINE, text),
    window(id, placement, covers, body) {
      const claims = `${idOf(id)} ${placement} covers=${covers}`;
      return `[compactor:window ${claims} mac=${mac('window', claims, body)}]${hint(id)}\n${body}`;
    },
    readWindow: (text) => placed('window', WINDOW_LINE, text),
    section: (id, body) => `[compactor:section-summary ${idOf(id)} mac=${mac('section', idOf(id), body)}]${hint(id)}\n${body}`,
    readSection: (text) => range('section', SECTION_LINE, text),
    qaHeader: (id, body) => `[compactor:qa-header ${idOf(id)} mac=${mac('qa', idOf(id), body)}]${hint(id)}\n${body}`,
    readQaHeader: (text) => range('qa', QA_LINE, text),
    placeholder(site, binding, id, text) {
      const name = id ?? 'cleared';
      const tag = mac('placeholder', JSON.stringify([site, binding]), unsigned(text));
      return text.replaceAll(`[compactor:${name}]`, `[compactor:${name} mac=${tag}]`);
    },
    placeholderArgs(binding, id, args) {
      const name = id ?? 'cleared';
      const tag = mac('placeholder', JSON.stringify(['call', binding]), unsigned(JSON.stringify(args)));
      const signed = (v: unknown) =>
        typeof v === 'string' ? v.replaceAll(`[compactor:${name}]`, `[compactor:${name} mac=${tag}]`) : v;
      return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, signed(v)]));
    },
    readPlaceholder(site, binding, text) {
      if (!mayBeSigned(text)) return undefined;
      let tag: string | undefined;
      for (const m of text.matchAll(PLACEHOLDER)) {
        const given = m[2]?.slice(5);
        if (given === undefined) continue;
        tag ??= mac('placeholder', JSON.stringify([site, binding]), unsigned(text));
        if (timingSafeEqual(Buffer.from(tag), Buffer.from(given))) return { id: m[1] === 'cleared' ? null : (m[1] as string) };
      }
      return undefined;
    },
  };
}
