import type { Item, Warning } from '../../history/types.js';
import { parseSummary, SUMMARY_REQUEST, type SummaryPlacement } from '../../history/vocabulary.js';
import { requestedCut, safeCut } from '../sliding-window.js';
import type { PreparedHistory } from '../types.js';
import type { SummarizeOptions } from './options.js';

export interface Earlier {
  /** Messages the earlier summary occupies (own or pair), or the message it joined. */
  start: number;
  end: number;
  marker: NonNullable<ReturnType<typeof parseSummary>>;
  /** For a joined summary: the host message as it was before the summary joined it. */
  host?: unknown;
}

/**
 * Finds an earlier summary of ours right after the prefix (or joined to its last message). Only
 * messages that exist are read: the prefix may be the whole history (nothing but system messages),
 * and a summary request may be its last message, with no answer after it.
 */
function findEarlier(h: PreparedHistory, prefixEnd: number): Earlier | undefined {
  const { format, messages } = h;
  const last = prefixEnd - 1;
  const prose = (i: number) => (i < messages.length ? format.prose(messages[i]) : undefined);
  if (last >= 0) {
    const joined = parseSummary(format.lastText(messages[last]));
    if (joined && (joined.placement === 'joined' || joined.placement === 'joined-string')) {
      return {
        start: last,
        end: last,
        marker: joined,
        host: format.dropLastText(messages[last], joined.placement === 'joined-string'),
      };
    }
  }
  const own = parseSummary(prose(prefixEnd));
  if (own?.placement === 'own') return { start: prefixEnd, end: prefixEnd + 1, marker: own };
  if (prose(prefixEnd) === SUMMARY_REQUEST) {
    const pair = parseSummary(prose(prefixEnd + 1));
    if (pair?.placement === 'pair') return { start: prefixEnd, end: prefixEnd + 2, marker: pair };
  }
  return undefined;
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

/** Steps 1 and 2: the prefix, the earlier summary, the placement and a cut the format accepts after it. */
export function planRolling(h: PreparedHistory, o: SummarizeOptions, warnings: Warning[]): RollingPlan {
  const { format, items, messages } = h;
  // The first user message is the original task, unless it is our own summary (or the request of
  // a pair summary), written by a run with keep_first_user false: the task is inside it, and it is
  // folded like any earlier summary, never kept as the task with a second summary after it.
  const first = h.firstUser >= 0 ? format.prose(messages[h.firstUser]) : undefined;
  const ours = first !== undefined && (first === SUMMARY_REQUEST || parseSummary(first) !== undefined);
  const firstUser = o.keep_first_user && !ours ? h.firstUser : -1;
  const requested = requestedCut(h, o.keep, firstUser);
  let cut = safeCut(h, requested);
  const keepFirst = firstUser >= h.head && firstUser < cut;
  const prefixEnd = keepFirst ? firstUser + 1 : h.head;
  const earlier = findEarlier(h, prefixEnd);
  const rangeStart = earlier && earlier.end > earlier.start ? earlier.end : prefixEnd;

  const hostIndex = prefixEnd - 1;
  const left = hostIndex >= 0 ? items[hostIndex] : undefined;
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
  if (cut < requested) {
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
