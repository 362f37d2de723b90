import type { Bindings } from '../history/bindings.js';
import type { Markers } from '../history/markers.js';
import type { CompactOptions } from './compact-options.js';
import type { PreparedHistory } from './types.js';

/** A tool result compaction may replace, with what it needs to decide and to write its placeholder. */
export interface ResultSiteInfo {
  index: number;
  slot: number;
  callId: string;
  text: string;
  tool: string;
  args: Record<string, unknown> | undefined;
  /** The call it answers (`Bindings`): what its placeholder is signed for. */
  binding: string;
  /** Never touched: the newest results, the newest group, excluded tools, earlier placeholders (verified). */
  protected: boolean;
  /** Kept by a rule's `keep_last`: never cleared, but truncated when over `truncate_tokens`. */
  kept: boolean;
}

/** Every tool result, with what compaction needs; one whose placeholder of ours verifies is protected. */
export function resultSites(h: PreparedHistory, o: CompactOptions, markers: Markers, bound: Bindings): ResultSiteInfo[] {
  const calls = new Map<string, { name: string; args: Record<string, unknown> | undefined }>();
  const sites: ResultSiteInfo[] = [];
  const newest = h.groups[h.groups.length - 1];
  const frozenFrom = newest && newest.kind !== 'head' ? newest.start : h.items.length;
  h.items.forEach((item, index) => {
    const message = h.messages[index];
    if (item.calls.length > 0) for (const c of h.format.callSites(message)) calls.set(c.id, c);
    if (item.results.length === 0) return;
    for (const r of h.format.resultSites(message)) {
      const call = calls.get(r.callId);
      const tool = call?.name ?? 'unknown';
      const binding = bound.result(index, r.slot) ?? '';
      sites.push({
        index,
        slot: r.slot,
        callId: r.callId,
        text: r.text,
        tool,
        args: call?.args,
        binding,
        protected:
          index >= frozenFrom ||
          o.exclude_tools.includes(tool) ||
          (bound.signed(index, r.slot) && !!markers.readPlaceholder('result', binding, r.text)),
        kept: false,
      });
    }
  });
  // The newest keep_tool_uses results, and each rule's newest keep_last of its tool, stay.
  for (let i = Math.max(0, sites.length - o.keep_tool_uses); i < sites.length; i++) (sites[i] as ResultSiteInfo).protected = true;
  for (const rule of o.rules) {
    if (rule.keep_last === undefined) continue;
    const own = sites.filter((s) => s.tool === rule.tool);
    for (const s of own.slice(Math.max(0, own.length - rule.keep_last))) s.kept = true;
  }
  return sites;
}

/**
 * The newest site seen with `s`'s text, or none (then `s` is that site from now on). Sites are
 * grouped by their text's length first: most results differ in length, and a text is hashed (a
 * map key: read whole) only when another of its length was seen.
 */
export function newerCopy(byLength: Map<number, ResultSiteInfo | Map<string, ResultSiteInfo>>, s: ResultSiteInfo) {
  const known = byLength.get(s.text.length);
  if (known === undefined) {
    byLength.set(s.text.length, s);
    return undefined;
  }
  if (!(known instanceof Map)) {
    if (known.text === s.text) return known;
    byLength.set(
      s.text.length,
      new Map([
        [known.text, known],
        [s.text, s],
      ]),
    );
    return undefined;
  }
  const newer = known.get(s.text);
  if (!newer) known.set(s.text, s);
  return newer;
}
