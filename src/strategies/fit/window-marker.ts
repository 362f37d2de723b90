import type { Addresser } from '../../history/address.js';
import type { OriginalKind } from '../../history/artifact-kinds.js';
import type { Markers, SummaryMarker } from '../../history/markers.js';
import type { Edit, Entry, Insert, OriginalSpec, Removal, StorePolicy } from '../../history/plan/types.js';
import type { Item, Warning } from '../../history/types.js';
import type { Dropped } from '../sliding-window.js';
import { rangeArtifact } from '../summarize/range.js';
import type { PreparedHistory, StrategyResult } from '../types.js';

/** The artifact kind of a range fit's window removed (restored by expand and MCP `recall`). */
export const WINDOW_RANGE = 'window_range' as const satisfies OriginalKind;

const USER: Item = { index: -1, role: 'user', userTurn: true, calls: [], results: [], thinking: false, original: null };

/** What a window marker says: how much it stands for (in all, earlier markers folded included) and what this range held. */
function bodyOf(h: PreparedHistory, range: readonly number[], covers: number): string {
  let calls = 0;
  let tokens = 0;
  for (const i of range) {
    calls += (h.items[i] as Item).calls.length;
    tokens += h.counts[i] as number;
  }
  const all = covers > range.length ? ` (${covers} in all, with the ranges removed before)` : '';
  return `${range.length} messages${all} were removed here to fit the context window: ${calls} tool calls, ${tokens} tokens.`;
}

/** Whether a summary joined `host` may be joined by a window marker too: a plain user turn, or assistant text without calls. */
function canHost(h: PreparedHistory, markers: Markers, host: number): boolean {
  const item = h.items[host];
  if (!item || item.pinned || item.opaque || item.sticky) return false;
  const plain =
    (item.role === 'user' && item.userTurn) || (item.role === 'assistant' && item.calls.length === 0 && !item.thinking);
  // A summary joined there stays the host's last text: rolling summaries find it there.
  return plain && markers.readSummary(h.format.lastText(h.messages[host])) === undefined;
}

/**
 * Fit's window never drops silently: each range it removes is stored as an artifact
 * (`window_range`) and replaced by a signed marker saying what was there and where it is, so
 * `expand` and MCP `recall` give it back. The marker stands as its own user message where the
 * format accepts one there, else it joins the message before the range as a text block (as a
 * summary does). A window marker right before a new range is folded into the new one (its range
 * chained as `previous_id`): one marker stands for every range removed at that place, and a
 * second fit never wraps a marker. Where neither form fits (a joined summary already ends the
 * message before), the range is dropped as asked and a `window_unmarked` warning says so.
 */
export function markWindow(
  h: PreparedHistory,
  windowed: StrategyResult<{ dropped: Dropped }>,
  env: { markers: Markers; address: Addresser; store: StorePolicy },
): StrategyResult<{ dropped: Dropped }> {
  const plan = windowed.plan;
  if (!plan) return windowed;
  const n = h.items.length;
  const removed = new Map<number, Removal>(plan.removed);
  const edits = new Map<number, Edit[]>();
  const inserts = new Map<number, Insert[]>();
  const artifacts: OriginalSpec[] = [...plan.artifacts];
  const warnings: Warning[] = [...windowed.warnings];
  const dropped = (i: number) => plan.removed.get(i)?.action === 'drop';
  for (let start = 0; start < n; start++) {
    if (!dropped(start)) continue;
    let end = start;
    while (end < n && dropped(end)) end++;
    const range = Array.from({ length: end - start }, (_, k) => start + k);
    const mark = markRange(h, range, env, removed);
    if (mark) {
      artifacts.push(...mark.specs);
      if (mark.insert) inserts.set(mark.insert.at, [mark.insert.text]);
      if (mark.host) edits.set(mark.host.at, mark.host.edits);
    } else
      warnings.push({
        code: 'window_unmarked',
        message: `messages ${start}–${end - 1} were dropped without a marker: no marker form fits between their neighbours in ${h.format.name}`,
      });
    start = end;
  }
  const entries: Entry[] = [];
  for (let k = 0; k <= n; k++) {
    const insert = inserts.get(k);
    if (insert) entries.push({ insert });
    if (k < n && !removed.has(k)) entries.push({ index: k, edits: edits.get(k) ?? [] });
  }
  return { ...windowed, plan: { entries, removed, artifacts }, warnings };
}

interface Mark {
  specs: OriginalSpec[];
  insert?: { at: number; text: Insert };
  host?: { at: number; edits: Edit[] };
}

/** One removed range's marker: folding a window marker right before it, standing on its own or joining the message before. */
function markRange(
  h: PreparedHistory,
  range: readonly number[],
  env: { markers: Markers; address: Addresser; store: StorePolicy },
  removed: Map<number, Removal>,
  leading = false,
): Mark | undefined {
  const { markers, address, store } = env;
  const { format, items, messages } = h;
  const first = range[0] as number;
  const end = first + range.length;
  // A marker of ours at the range's start (the window reached it) is folded, not wrapped.
  const atStart = markers.readWindow(format.prose(messages[first]));
  if (atStart?.placement === 'own' && range.length > 1) return markRange(h, range.slice(1), env, removed, true);
  const start = first;
  let prev = start - 1;
  let earlier: SummaryMarker | undefined;
  let restore: Edit[] = [];
  const own = prev >= 0 && (leading || !removed.has(prev)) ? markers.readWindow(format.prose(messages[prev])) : undefined;
  if (own?.placement === 'own') {
    earlier = own;
    prev--;
  } else if (prev >= 0 && !removed.has(prev)) {
    const joined = markers.readWindow(format.lastText(messages[prev]));
    if (joined && joined.placement !== 'own') {
      earlier = joined;
      restore = [{ op: 'drop-last-text', collapse: joined.placement === 'joined-string' }];
    }
  }
  const covers = range.length + (earlier?.covers ?? 0);
  const left = prev >= 0 ? items[prev] : undefined;
  const next = end < items.length ? items[end] : undefined;
  const standsAlone = format.canFollow(left, USER) && (next === undefined || format.canFollow(USER, next));
  const hosted = !standsAlone && prev >= 0 && (restore.length > 0 || canHost(h, markers, prev));
  if (!standsAlone && !hosted) return undefined;
  const ranged = rangeArtifact(WINDOW_RANGE, h, range, earlier?.id ?? null, store, address);
  const body = bodyOf(h, range, covers);
  if (earlier && restore.length === 0) removed.set(start - 1, { action: 'drop' });
  if (standsAlone) {
    const text: Insert = { kind: 'text', role: 'user', text: markers.window(ranged.id, 'own', covers, body) };
    return {
      specs: ranged.specs,
      insert: { at: start, text },
      ...(restore.length ? { host: { at: prev, edits: restore } } : {}),
    };
  }
  // The host as it stands before the marker joins it (an earlier marker taken out): string content stays a string.
  const undo = restore[0];
  const base = undo?.op === 'drop-last-text' ? format.dropLastText(messages[prev], undo.collapse) : messages[prev];
  const collapse = typeof (base as { content?: unknown } | undefined)?.content === 'string';
  const text = markers.window(ranged.id, collapse ? 'joined-string' : 'joined', covers, body);
  return { specs: ranged.specs, host: { at: prev, edits: [...restore, { op: 'append-text', text }] } };
}
