import type { FormatAdapter } from './format.js';
import type { Markers, SummaryMarker } from './markers.js';
import { isRangePayload, SUMMARY_REQUEST, SUMMARY_TOOL } from './vocabulary.js';

/**
 * Expand's second half: the summaries of ours in a history (a rolling summary, a section summary,
 * a QA-merged header) replaced by the messages they stand for, read from their range artifacts.
 * `expand.ts` restores the placeholders first, then calls this.
 */

/** Told the ids of the originals about to be restored (one entry per place), before they are; throws to refuse. */
export type Weigh = (ids: readonly string[]) => void;

/** What a message is to expand: a summary of ours, a section summary, a QA header, or none of them. */
type Reading =
  | { kind: 'qa'; id: string | null }
  | { kind: 'section'; id: string | null; callId: string | undefined }
  | { kind: 'summary'; marker: SummaryMarker }
  | undefined;

/**
 * Reads a message's markers through `markers` (only those that verify count): its prose, its first
 * result (a synthetic `compactor_summary` exchange's), and its last text block when that is not
 * its whole prose (a summary joined to a neighbour). Each text is verified once.
 */
function readMessage(format: FormatAdapter, markers: Markers, message: unknown): Reading {
  const prose = format.prose(message);
  const qa = markers.readQaHeader(prose);
  if (qa) return { kind: 'qa', id: qa.id };
  const section = markers.readSection(prose);
  if (section) return { kind: 'section', id: section.id, callId: undefined };
  const result = format.resultSites(message)[0];
  const answered = result ? markers.readSection(result.text) : undefined;
  if (answered && result) return { kind: 'section', id: answered.id, callId: result.callId };
  // A window marker (fit's window) stands where its range was, placed as a summary is.
  const own = markers.readSummary(prose) ?? markers.readWindow(prose);
  if (own) return { kind: 'summary', marker: own };
  const last = format.lastText(message);
  const joined = last !== prose ? (markers.readSummary(last) ?? markers.readWindow(last)) : undefined;
  return joined && (joined.placement === 'joined' || joined.placement === 'joined-string')
    ? { kind: 'summary', marker: joined }
    : undefined;
}

/** Which messages are pinned instructions (`Item.pinned`); none when the history does not parse. */
function pinnedOf(format: FormatAdapter, messages: readonly unknown[]): boolean[] {
  try {
    return format.parse(messages).items.map((item) => item.pinned === true);
  } catch {
    return [];
  }
}

/**
 * Puts the transcript a summary stands for back in its place: the summarized range, preceded by
 * whatever each earlier summary it folded stood for (followed through `previous_id`). A summary
 * that joined a neighbour is taken out of it first. Unknown or expired ranges stay summarized; a
 * marker that does not verify is the user's text, left as it is.
 */
export async function expandSummaries(
  format: FormatAdapter,
  markers: Markers,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
  missing: Set<string>,
  weigh: Weigh,
): Promise<{ messages: unknown[]; restored: number }> {
  const resolve = async (id: string, depth: number): Promise<unknown[] | undefined> => {
    const found = (await lookup([id])).get(id);
    if (!isRangePayload(found) || depth > 64) {
      missing.add(id);
      return undefined;
    }
    weigh([id]);
    const earlier = found.previous_id ? ((await resolve(found.previous_id, depth + 1)) ?? []) : [];
    return [...earlier, ...found.messages];
  };
  const pinned = pinnedOf(format, input);
  // Each message is read once (a QA header looks ahead at the next two).
  const readings: Reading[] = [];
  const reading = (i: number): Reading => {
    if (!(i in readings)) readings[i] = readMessage(format, markers, input[i]);
    return readings[i];
  };
  const out: unknown[] = [];
  let restored = 0;
  for (let i = 0; i < input.length; i++) {
    const message = input[i];
    const read = reading(i);
    // A QA-merged header: the span it names replaces it and the summary pair that follows it.
    if (read?.kind === 'qa' && read.id) {
      let bodyEnd = i + 1;
      while (bodyEnd < input.length && bodyEnd <= i + 2 && reading(bodyEnd)?.kind !== 'section') bodyEnd++;
      const range = bodyEnd < input.length && reading(bodyEnd)?.kind === 'section' ? await resolve(read.id, 0) : undefined;
      if (range) {
        out.push(...range);
        restored++;
        i = bodyEnd;
        continue;
      }
    }
    // A section summary: marked assistant text, or the result of a synthetic compactor_summary call.
    if (read?.kind === 'section' && read.id) {
      const range = await resolve(read.id, 0);
      if (range) {
        placeSection(format, out, read.callId, range);
        restored++;
        continue;
      }
    }
    const marker = read?.kind === 'summary' ? read.marker : undefined;
    if (!marker?.id) {
      out.push(message);
      continue;
    }
    const range = await resolve(marker.id, 0);
    if (!range) {
      out.push(message);
      continue;
    }
    restored++;
    i = placeSummary(format, { input, pinned, out }, i, marker, range);
  }
  return { messages: out, restored };
}

/** A section summary's range in its place, and in place of the synthetic call it answers (`callId`), if it follows one. */
function placeSection(format: FormatAdapter, out: unknown[], callId: string | undefined, range: readonly unknown[]): void {
  const previous = out[out.length - 1];
  if (callId !== undefined && previous && format.callSites(previous).some((c) => c.name === SUMMARY_TOOL && c.id === callId)) {
    out.pop();
  }
  out.push(...range);
}

/**
 * A summary's range in place of the summary at `i`: a joined summary is taken out of its host
 * (kept), with the pinned instructions that follow the host; a summary pair's request goes with
 * it. Returns the last input index used.
 */
function placeSummary(
  format: FormatAdapter,
  at: { readonly input: readonly unknown[]; readonly pinned: readonly boolean[]; readonly out: unknown[] },
  i: number,
  marker: SummaryMarker,
  range: readonly unknown[],
): number {
  const { input, pinned, out } = at;
  if (marker.placement === 'joined' || marker.placement === 'joined-string') {
    // The instructions that follow the host stood before the range too: they stay before it.
    out.push(format.dropLastText(input[i], marker.placement === 'joined-string'));
    let last = i;
    while (last + 1 < input.length && pinned[last + 1]) out.push(input[++last]);
    out.push(...range);
    return last;
  }
  if (marker.placement === 'pair' && out.length > 0 && format.prose(out[out.length - 1]) === SUMMARY_REQUEST) out.pop();
  out.push(...range);
  return i;
}
