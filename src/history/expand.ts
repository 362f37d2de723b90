import { bindings } from './bindings.js';
import { expandSummaries, type Weigh } from './expand-summaries.js';
import type { FormatAdapter } from './format.js';
import { type Markers, signedPlaceholderIds, unverifiedRanges } from './markers.js';
import type { Warning } from './types.js';

/** One placeholder found in a history: where it is and which artifact it names. */
interface Reference {
  index: number;
  kind: 'call' | 'result';
  slot: number;
  id: string;
  /** The call id the slot answers or makes: a restored original must carry the same. */
  callId: string;
}

/**
 * The placeholders of ours in a history, naming an artifact: those whose MAC verifies for the
 * site they sit in and the call it belongs to (`bindings`), each at most once (the same
 * placeholder twice in one call's slots is a copy; `used`: those restored in earlier rounds). The ids of the others that carry a MAC (moved
 * to another call, repeated, edited, another key's or another secret's) go to `unverified`.
 */
function references(
  format: FormatAdapter,
  markers: Markers,
  messages: readonly unknown[],
  unverified?: Set<string>,
  used = new Set<string>(),
): Reference[] {
  const refs: Reference[] = [];
  const bound = bindings(format, messages);
  const read = (kind: 'call' | 'result', binding: string | undefined, text: string): string | undefined => {
    const id = binding === undefined ? undefined : markers.readPlaceholder(kind, binding, text)?.id;
    const key = id ? JSON.stringify([kind, binding, id]) : '';
    if (id && !used.has(key)) {
      used.add(key);
      return id;
    }
    if (unverified) for (const claimed of signedPlaceholderIds(text)) unverified.add(claimed);
    return undefined;
  };
  messages.forEach((message, index) => {
    for (const r of format.resultSites(message)) {
      const id = read('result', bound.result(index, r.slot), r.text);
      if (id) refs.push({ index, kind: 'result', slot: r.slot, id, callId: r.callId });
    }
    for (const c of format.callSites(message)) {
      const id = c.args ? read('call', bound.call(index, c.slot), JSON.stringify(c.args)) : undefined;
      if (id) refs.push({ index, kind: 'call', slot: c.slot, id, callId: c.id });
    }
  });
  return refs;
}

/** The artifact ids a history's placeholders of ours name, without repeats. */
export function referencedIds(format: FormatAdapter, markers: Markers, messages: readonly unknown[]): string[] {
  return [...new Set(references(format, markers, messages).map((r) => r.id))];
}

export interface ExpandResult {
  messages: unknown[];
  restored: number;
  missing: string[];
  warnings: Warning[];
}

/** The warning for signed placeholders left as they are because they do not verify where they sit (a few ids named). */
function unverifiedWarning(ids: ReadonlySet<string>): Warning[] {
  if (ids.size === 0) return [];
  const named = [...ids].slice(0, 5).join(', ');
  return [
    {
      code: 'placeholder_not_verified',
      message: `${ids.size} signed placeholder${ids.size === 1 ? '' : 's'} (${named}${ids.size > 5 ? ', …' : ''}) left as they are: each verifies only in the slot of the tool call it was written for, once (copied into another call or repeated, edited, or signed for another key or under another COMPACTOR_ARTIFACT_SECRET)`,
    },
  ];
}

/**
 * Puts every original whose artifact `lookup` knows back in place of its placeholder, byte-exact
 * (the same JSON values, in the same order). A placeholder counts only when its MAC verifies for
 * the call its slot answers or makes, over the slot's whole text, and an original is restored only
 * into a slot of the same tool call, so text that merely quotes a marker is never replaced; a
 * summary, section summary or QA header is expanded only when its marker verifies (`markers`: the
 * caller's), so a forged, quoted or foreign one stays as the user's text. Rounds repeat while
 * restored originals hold placeholders or summaries of their own. `weigh` is told the ids about to
 * be restored (one per placeholder or summary) before they are, and may refuse by throwing.
 */
export async function expandHistory(
  format: FormatAdapter,
  markers: Markers,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
  weigh: Weigh = () => {},
): Promise<ExpandResult> {
  const missing = new Set<string>();
  // Summaries first, in rounds: a restored span can hold summaries of an earlier call.
  let summaries = await expandSummaries(format, markers, input, lookup, missing, weigh);
  let restored = summaries.restored;
  for (let round = 0; round < 8 && summaries.restored > 0; round++) {
    summaries = await expandSummaries(format, markers, summaries.messages, lookup, missing, weigh);
    restored += summaries.restored;
  }
  const unverified = unverifiedRanges(summaries.messages, missing);
  const offloaded = await restoreOffloaded(format, markers, summaries.messages, lookup, missing, weigh, unverified);
  return {
    messages: offloaded.messages,
    restored: restored + offloaded.restored,
    missing: [...missing],
    warnings: unverifiedWarning(unverified),
  };
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
  markers: Markers,
  input: readonly unknown[],
  lookup: (ids: readonly string[]) => Promise<Map<string, unknown>>,
  missing: Set<string> = new Set(),
  weigh: Weigh = () => {},
  unverified?: Set<string>,
): Promise<{ messages: unknown[]; restored: number }> {
  const messages = [...input];
  let restored = 0;
  const used = new Set<string>();
  for (let round = 0; round < 8; round++) {
    const refs = references(format, markers, messages, unverified, used).filter((r) => !missing.has(r.id));
    if (refs.length === 0) break;
    const found = await lookup([...new Set(refs.map((r) => r.id))]);
    weigh(refs.filter((r) => found.has(r.id)).map((r) => r.id));
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
