import { taggedSha256, tagOfList } from '../../tokens/content-tag.js';
import type { PreparedEntry, PreparedHistory, PreparedRange, StrategyContext } from '../types.js';

export type { PreparedEntry, PreparedRange } from '../types.js';

import { summaryKey } from './cache.js';
import type { SummarizeOptions } from './options.js';
import { rangeArtifact } from './range.js';
import { planRolling } from './rolling-plan.js';

/** Where the range starts and what precedes it, in `h` under options `o`. */
function rangeStart(h: PreparedHistory, o: SummarizeOptions, ctx: Pick<StrategyContext, 'markers' | 'address'>) {
  const p = planRolling(h, o, ctx.markers, []);
  const from = p.earlier && p.earlier.end > p.earlier.start ? p.earlier.end : p.prefixEnd;
  const before = h.messages.slice(0, from);
  const text = () => `prepared-prefix\n${JSON.stringify(before)}`;
  const tags = tagOfList(before);
  const prefix = (tags === undefined ? ctx.address(text()) : ctx.address.ofDigest(taggedSha256(`prefix\0${tags}`, text))).id;
  return { p, from, prefix };
}

/**
 * The range a rolling summary under `o` would cover in `h` now, identified; undefined when there
 * is nothing to summarize, or in sections mode (only rolling summaries are prepared).
 */
export function rollingRange(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: Pick<StrategyContext, 'markers' | 'address' | 'summarizer'>,
): PreparedRange | undefined {
  if (o.mode !== 'rolling' || !ctx.summarizer) return undefined;
  const { p, from, prefix } = rangeStart(h, o, ctx);
  if (p.range.length === 0 || p.opaque.length > 0) return undefined;
  const previous = p.earlier?.marker.text ?? null;
  const ranged = rangeArtifact('summary_range', h, p.range, p.earlier?.marker.id ?? null, o.store, ctx.address);
  const key = summaryKey('rolling', ctx.summarizer, o, JSON.stringify([previous, ranged.sha256]), ctx.address);
  return { id: key.id, prefix, from, to: p.cut };
}

/** The options that make a rolling summary cover exactly messages up to `to` of `h` (the tail kept from `to`). */
export function coveringTo(h: PreparedHistory, o: SummarizeOptions, to: number): SummarizeOptions {
  return { ...o, keep: { messages: h.messages.length - to } };
}

/**
 * A prepared range that `h` still holds byte-identical at the same place, in `states`: the newest
 * (longest) first. Only entries of the same conversation (same prefix) are checked, each by the
 * range's own hash: linear in the history. Returns the entry and the options whose summary is it.
 */
export function preparedIn(
  h: PreparedHistory,
  o: SummarizeOptions,
  ctx: Pick<StrategyContext, 'markers' | 'address' | 'summarizer'>,
  entries: readonly PreparedEntry[],
  states: readonly PreparedEntry['state'][],
): { entry: PreparedEntry; options: SummarizeOptions } | undefined {
  if (entries.length === 0 || o.mode !== 'rolling') return undefined;
  const { prefix, from } = rangeStart(h, o, ctx);
  const candidates = entries
    .filter((e) => e.prefix === prefix && e.from === from && states.includes(e.state) && e.to > from && e.to < h.messages.length)
    .sort((a, b) => b.to - a.to);
  for (const entry of candidates) {
    const options = coveringTo(h, o, entry.to);
    const range = rollingRange(h, options, ctx);
    if (range?.id === entry.id && range.to === entry.to) return { entry, options };
  }
  return undefined;
}
