import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The markers a later call honours, written and verified in one place: the first line of a rolling
 * summary, of a section summary and of a QA-merged header. Each carries a MAC (`mac=` 16 hex
 * digits: HMAC-SHA256 under a key derived from the installation secret and the caller's scope,
 * over what the marker claims and the whole text it vouches for). A marker is ours only when its
 * MAC verifies: anything else (forged, quoted, truncated, edited, or another caller's) is the
 * user's text, summarized, counted and restored like any other. Nobody reads these markers but
 * through `Markers`.
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

/** Writes and verifies one caller's markers. Each read is one syntactic match and, on a match, one MAC over the text. */
export interface Markers {
  /** A summary's whole text: its signed first line, then `body`. */
  summary(id: string | null, placement: SummaryPlacement, covers: number, body: string): string;
  /** The summary a text is, when it starts with a marker that verifies; undefined for anything else. */
  readSummary(text: string | undefined): SummaryMarker | undefined;
  /** A section summary's whole text (its message's, or its synthetic tool result's). */
  section(id: string | null, body: string): string;
  readSection(text: string | undefined): RangeMarker | undefined;
  /** A QA-merged header's whole text: it names the merged span's artifact. */
  qaHeader(id: string | null, body: string): string;
  readQaHeader(text: string | undefined): RangeMarker | undefined;
}

const ID = '(art_[0-9a-f]{24}|none)';
const MAC = 'mac=([0-9a-f]{16})';
const SUMMARY_LINE = new RegExp(`^\\[compactor:summary ${ID} (own|pair|joined|joined-string) covers=(\\d{1,15}) ${MAC}\\]\\n`);
const SECTION_LINE = new RegExp(`^\\[compactor:section-summary ${ID} ${MAC}\\]\\n`);
const QA_LINE = new RegExp(`^\\[compactor:qa-header ${ID} ${MAC}\\]\\n`);

/**
 * The markers of one scope, keyed by the installation secret and the scope (as artifact ids are):
 * the same secret, scope and text always give the same bytes, and a marker written for one caller
 * never verifies for another. Never throws; a text that does not verify reads as undefined.
 */
export function markers(secret: string, scope: string): Markers {
  const key = createHmac('sha256', secret).update(`compactor-marker\0${scope}`).digest();
  const mac = (kind: string, claims: string, body: string) =>
    createHmac('sha256', key).update(`${kind}\0${claims}\0`).update(body).digest('hex').slice(0, 16);
  const verified = (kind: string, claims: string, body: string, given: string) =>
    timingSafeEqual(Buffer.from(mac(kind, claims, body)), Buffer.from(given));
  const idOf = (id: string | null) => id ?? 'none';
  const readId = (id: string) => (id === 'none' ? null : id);
  const range = (kind: 'section' | 'qa', line: RegExp, text: string | undefined): RangeMarker | undefined => {
    const m = text === undefined ? null : line.exec(text);
    if (!m || text === undefined) return undefined;
    const body = text.slice(m[0].length);
    return verified(kind, m[1] as string, body, m[2] as string) ? { id: readId(m[1] as string), text: body } : undefined;
  };
  return {
    summary(id, placement, covers, body) {
      const claims = `${idOf(id)} ${placement} covers=${covers}`;
      return `[compactor:summary ${claims} mac=${mac('summary', claims, body)}]\n${body}`;
    },
    readSummary(text) {
      const m = text === undefined ? null : SUMMARY_LINE.exec(text);
      if (!m || text === undefined) return undefined;
      const claims = `${m[1]} ${m[2]} covers=${m[3]}`;
      const body = text.slice(m[0].length);
      if (!verified('summary', claims, body, m[4] as string)) return undefined;
      return { id: readId(m[1] as string), placement: m[2] as SummaryPlacement, covers: Number(m[3]), text: body };
    },
    section: (id, body) => `[compactor:section-summary ${idOf(id)} mac=${mac('section', idOf(id), body)}]\n${body}`,
    readSection: (text) => range('section', SECTION_LINE, text),
    qaHeader: (id, body) => `[compactor:qa-header ${idOf(id)} mac=${mac('qa', idOf(id), body)}]\n${body}`,
    readQaHeader: (text) => range('qa', QA_LINE, text),
  };
}
