import type { Markers, SummaryMarker, SummaryPlacement } from '../../history/markers.js';
import type { Item, Warning } from '../../history/types.js';
import { SUMMARY_REQUEST } from '../../history/vocabulary.js';
import { firstTurn, firstTurnGroupsEnd } from '../first-turn.js';
import { requestedCut, safeCut } from '../sliding-window.js';
import type { PreparedHistory } from '../types.js';
import type { SummarizeOptions } from './options.js';

export interface Earlier {
  /** Messages the earlier summary occupies (own or pair), or the message it joined. */
  start: number;
  end: number;
  marker: SummaryMarker;
  /** For a joined summary: the host message as it was before the summary joined it. */
  host?: unknown;
}

/**
 * A summary of ours in its own message at `at`, or a pair (the request, then the summary) starting
 * there. Only a summary whose marker verifies counts; the request alone is the user's text. Only
 * messages that exist are read: a summary request may be the history's last message.
 */
function summaryAt(h: PreparedHistory, markers: Markers, at: number): Earlier | undefined {
  const { format, messages } = h;
  const prose = (i: number) => (i < messages.length ? format.prose(messages[i]) : undefined);
  const text = prose(at);
  if (text === SUMMARY_REQUEST) {
    const pair = markers.readSummary(prose(at + 1));
    return pair?.placement === 'pair' ? { start: at, end: at + 2, marker: pair } : undefined;
  }
  const own = markers.readSummary(text);
  return own?.placement === 'own' ? { start: at, end: at + 1, marker: own } : undefined;
}

/**
 * Finds an earlier summary of ours right after the prefix, or joined to its host (the prefix's
 * last message that is not a pinned instruction). The prefix may be the whole history (nothing
 * but system messages).
 */
function findEarlier(h: PreparedHistory, markers: Markers, prefixEnd: number, hostIndex: number): Earlier | undefined {
  const { format, messages } = h;
  if (hostIndex >= 0) {
    const joined = markers.readSummary(format.lastText(messages[hostIndex]));
    if (joined && (joined.placement === 'joined' || joined.placement === 'joined-string')) {
      return {
        start: hostIndex,
        end: hostIndex,
        marker: joined,
        host: format.dropLastText(messages[hostIndex], joined.placement === 'joined-string'),
      };
    }
  }
  return summaryAt(h, markers, prefixEnd);
}

/** The message a summary joins when it cannot stand on its own: the prefix's last that is not a pinned instruction. */
function hostOf(h: PreparedHistory, prefixEnd: number): number {
  let i = prefixEnd - 1;
  while (i >= h.head && (h.items[i] as Item).pinned) i--;
  return i;
}

const roleItem = (role: Item['role']): Item => ({
  index: -1,
  role,
  userTurn: role === 'user',
  calls: [],
  results: [],
  thinking: false,
  original: null,
});

/** Where a rolling summary goes and what it replaces: everything known before it is written. */
export interface RollingPlan {
  prefixEnd: number;
  hostIndex: number;
  left: Item | undefined;
  earlier: Earlier | undefined;
  placement: SummaryPlacement;
  summaryRole: 'user' | 'system';
  /** Start of the kept tail. */
  cut: number;
  /** Messages summarized, and opaque ones kept in place of them. */
  range: number[];
  opaque: number[];
}

/**
 * Steps 1 and 2: the prefix, the earlier summary, the placement and a cut the format accepts after
 * it. Markers are read through `markers`: one that does not verify is conversation.
 */
export function planRolling(h: PreparedHistory, o: SummarizeOptions, markers: Markers, warnings: Warning[]): RollingPlan {
  const { format, items, messages } = h;
  // The first user message is the original task, unless it is our own summary (or the request of
  // a pair summary), written by a run with keep_first_user false: the task is inside it, and it is
  // folded like any earlier summary, never kept as the task with a second summary after it.
  const ours = h.firstUser >= 0 && summaryAt(h, markers, h.firstUser) !== undefined;
  const turn = o.keep_first_user && !ours ? firstTurn(h, markers) : ([-1, -1] as const);
  const requested = requestedCut(h, o.keep, turn);
  let cut = safeCut(h, requested);
  const keepFirst = turn[0] >= h.head && turn[0] < cut;
  // The task's whole turn, as whole groups: every user message before the first assistant-side
  // item (Codex's environment and the request after it), and an instruction that follows it.
  const prefixEnd = keepFirst ? firstTurnGroupsEnd(h, turn) : h.head;
  if (cut < prefixEnd) cut = prefixEnd;
  const hostIndex = hostOf(h, prefixEnd);
  const earlier = findEarlier(h, markers, prefixEnd, hostIndex);
  const rangeStart = earlier && earlier.end > earlier.start ? earlier.end : prefixEnd;
  // A pinned instruction after the prefix ends the range: it stays where it stands, and so does what follows it.
  const pinned = h.groups.find((g) => g.pinned && g.start >= rangeStart && g.start < cut);
  if (pinned) {
    cut = pinned.start;
    warnings.push({
      code: 'instruction_kept',
      message: `the summary ends before message ${pinned.start}: the instruction at ${pinnedIndex(h, pinned)} is kept in place with its turn`,
    });
  }

  const left = prefixEnd > 0 ? items[prefixEnd - 1] : undefined;
  const summaryRole = o.summary_role === 'system' ? 'system' : 'user';
  let placement: SummaryPlacement = o.summary_role === 'pair' ? 'pair' : 'own';
  // A summary that would follow a message of its own role where roles must alternate joins it.
  if (!format.canFollow(left, roleItem(placement === 'pair' ? 'user' : summaryRole))) {
    const host = earlier?.host ?? messages[hostIndex];
    placement = typeof (host as { content?: unknown })?.content === 'string' ? 'joined-string' : 'joined';
  }
  const lastRole: Item['role'] = placement === 'pair' ? 'assistant' : placement === 'own' ? summaryRole : (left?.role ?? 'user');
  while (cut > rangeStart && cut < items.length && !format.canFollow(roleItem(lastRole), items[cut] as Item)) {
    cut = (h.groups[(h.groupOf[cut] as number) - 1] as { start: number }).start;
  }
  if (cut < requested && !pinned) {
    warnings.push({
      code: 'unsafe_cut_avoided',
      message: `the kept tail starts at message ${cut}, not ${requested}: a cut there is not safe`,
    });
  }
  const range: number[] = [];
  const opaque: number[] = [];
  for (let i = rangeStart; i < cut; i++) ((items[i] as Item).opaque ? opaque : range).push(i);
  return { prefixEnd, hostIndex, left, earlier, placement, summaryRole, cut, range, opaque };
}

/** The first pinned message of a pinned group. */
function pinnedIndex(h: PreparedHistory, group: { start: number; end: number }): number {
  for (let i = group.start; i < group.end; i++) if ((h.items[i] as Item).pinned) return i;
  return group.start;
}
