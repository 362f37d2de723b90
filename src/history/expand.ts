import type { FormatAdapter } from './format.js';
import {
  isRangePayload,
  markedIds,
  parseQaHeader,
  parseSectionSummary,
  parseSummary,
  SUMMARY_REQUEST,
  SUMMARY_TOOL,
} from './vocabulary.js';

/** One placeholder found in a history: where it is and which artifact it names. */
interface Reference {
  index: number;
  kind: 'call' | 'result';
  slot: number;
  id: string;
  /** The call id the slot answers or makes: a restored original must carry the same. */
  callId: string;
}

function references(format: FormatAdapter, messages: readonly unknown[]): Reference[] {
  const refs: Reference[] = [];
  messages.forEach((message, index) => {
    for (const r of format.resultSites(message)) {
      const id = markedIds(r.text)[0];
      if (id) refs.push({ index, kind: 'result', slot: r.slot, id, callId: r.callId });
    }
    for (const c of format.callSites(message)) {
      const id = c.args ? markedIds(JSON.stringify(c.args))[0] : undefined;
      if (id) refs.push({ index, kind: 'call', slot: c.slot, id, callId: c.id });
    }
  });
  return refs;
}

/** The artifact ids a history's placeholders name, without repeats. */
export function referencedIds(format: FormatAdapter, messages: readonly unknown[]): string[] {
  return [...new Set(references(format, messages).map((r) => r.id))];
}

export interface ExpandResult {
  messages: unknown[];
  restored: number;
  missing: string[];
}

/**
 * Puts every original whose artifact `lookup` knows back in place of its placeholder, byte-exact
 * (the same JSON values, in the same order). An original is restored only into a slot that
 * answers or makes the same tool call, so text that merely quotes a marker is never replaced.
 * Rounds repeat while restored originals hold placeholders of their own.
 */
export async function expandHistory(
  format: FormatAdapter,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
): Promise<ExpandResult> {
  const missing = new Set<string>();
  // Summaries first, in rounds: a restored span can hold summaries of an earlier call.
  let summaries = await expandSummaries(format, input, lookup, missing);
  let restored = summaries.restored;
  for (let round = 0; round < 8 && summaries.restored > 0; round++) {
    summaries = await expandSummaries(format, summaries.messages, lookup, missing);
    restored += summaries.restored;
  }
  const offloaded = await restoreOffloaded(format, summaries.messages, lookup, missing);
  return { messages: offloaded.messages, restored: restored + offloaded.restored, missing: [...missing] };
}

/**
 * Puts back the originals that compaction offloaded (the placeholders of tool results and tool
 * calls), without touching summaries: a copy of `input` with every known original in place, in
 * rounds while restored originals hold placeholders of their own (at most 8). An original goes
 * only into a slot that answers or makes the same tool call; unknown ids are added to `missing`.
 * The message count never changes.
 */
export async function restoreOffloaded(
  format: FormatAdapter,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
  missing: Set<string> = new Set(),
): Promise<{ messages: unknown[]; restored: number }> {
  const messages = [...input];
  let restored = 0;
  for (let round = 0; round < 8; round++) {
    const refs = references(format, messages).filter((r) => !missing.has(r.id));
    if (refs.length === 0) break;
    const found = await lookup([...new Set(refs.map((r) => r.id))]);
    let progress = false;
    for (const ref of refs) {
      if (!found.has(ref.id)) {
        missing.add(ref.id);
        continue;
      }
      const candidate = format.replaceUnit(messages[ref.index], ref.kind, ref.slot, found.get(ref.id));
      const sites = ref.kind === 'result' ? format.resultSites(candidate) : format.callSites(candidate);
      const same = sites.find((s) => s.slot === ref.slot);
      const callId = same && ('callId' in same ? same.callId : same.id);
      if (callId !== ref.callId) {
        missing.add(ref.id);
        continue;
      }
      messages[ref.index] = candidate;
      restored++;
      progress = true;
    }
    if (!progress) break;
  }
  return { messages, restored };
}

/**
 * Puts the transcript a summary stands for back in its place: the summarized range, preceded by
 * whatever each earlier summary it folded stood for (followed through `previous_id`). A summary
 * that joined a neighbour is taken out of it first. Unknown or expired ranges stay summarized.
 */
async function expandSummaries(
  format: FormatAdapter,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
  missing: Set<string>,
): Promise<{ messages: unknown[]; restored: number }> {
  const resolve = async (id: string, depth: number): Promise<unknown[] | undefined> => {
    const found = (await lookup([id])).get(id);
    if (!isRangePayload(found) || depth > 64) {
      missing.add(id);
      return undefined;
    }
    const earlier = found.previous_id ? ((await resolve(found.previous_id, depth + 1)) ?? []) : [];
    return [...earlier, ...found.messages];
  };
  const out: unknown[] = [];
  let restored = 0;
  const sectionOf = (message: unknown) =>
    parseSectionSummary(format.prose(message)) ?? parseSectionSummary(format.resultSites(message)[0]?.text);
  const isSectionSummary = (message: unknown) => sectionOf(message) !== undefined;
  for (let i = 0; i < input.length; i++) {
    const message = input[i];
    // A QA-merged header: the span it names replaces it and the summary pair that follows it.
    const qa = parseQaHeader(format.prose(message));
    if (qa?.id) {
      let bodyEnd = i + 1;
      while (bodyEnd < input.length && bodyEnd <= i + 2 && !isSectionSummary(input[bodyEnd])) bodyEnd++;
      const range = bodyEnd < input.length && isSectionSummary(input[bodyEnd]) ? await resolve(qa.id, 0) : undefined;
      if (range) {
        out.push(...range);
        restored++;
        i = bodyEnd;
        continue;
      }
    }
    // A section summary: marked assistant text, or the result of a synthetic compactor_summary call.
    const section = sectionOf(message);
    if (section?.id) {
      const range = await resolve(section.id, 0);
      if (range) {
        const previous = out[out.length - 1];
        if (format.resultSites(message).length > 0 && previous && format.callSites(previous).some((c) => c.name === SUMMARY_TOOL))
          out.pop();
        out.push(...range);
        restored++;
        continue;
      }
    }
    const own = parseSummary(format.prose(message));
    const joined = own ? undefined : parseSummary(format.lastText(message));
    const marker = own ?? joined;
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
    if (marker.placement === 'joined' || marker.placement === 'joined-string') {
      out.push(format.dropLastText(message, marker.placement === 'joined-string'), ...range);
    } else {
      if (marker.placement === 'pair' && out.length > 0 && format.prose(out[out.length - 1]) === SUMMARY_REQUEST) out.pop();
      out.push(...range);
    }
  }
  return { messages: out, restored };
}
