import type { Markers } from '../history/markers.js';
import type { Item } from '../history/types.js';
import { SUMMARY_REQUEST } from '../history/vocabulary.js';
import type { PreparedHistory } from './types.js';

/**
 * The first user turn (the task): the first real user message after the head and every message
 * after it up to the first one the model or a tool wrote (an assistant message, reasoning, a tool
 * call or its result). So Codex's `<environment_context>` message and the request typed after it,
 * Claude Code's reminders and prompt, and any instruction or item of an unknown type between them,
 * are one turn, kept byte-identical by every strategy. A message of ours (a summary, its request,
 * a window marker: any text whose marker verifies) ends the turn too, so that a later call folds
 * it instead of keeping it as the task. Returns `[start, end)`, or `[-1, -1]` when there is no user
 * turn. Linear in the turn's length.
 */
export function firstTurn(h: PreparedHistory, markers?: Markers): readonly [number, number] {
  const start = h.firstUser;
  if (start < 0) return [-1, -1];
  const { items, messages, format } = h;
  let end = start + 1;
  while (end < items.length) {
    const item = items[end] as Item;
    if (item.role === 'assistant' || item.role === 'tool' || (item.role === 'user' && !item.userTurn)) break;
    if (item.role === 'user' && ours(format.prose(messages[end]), markers)) break;
    end++;
  }
  return [start, end];
}

/** Whether a user message's text is one we wrote (a summary, its request, a marker that verifies). */
function ours(text: string, markers: Markers | undefined): boolean {
  if (text === SUMMARY_REQUEST) return true;
  if (!text.startsWith('[compactor:') || !markers) return false;
  return (
    markers.readSummary(text) !== undefined || markers.readQaHeader(text) !== undefined || markers.readSection(text) !== undefined
  );
}

/** The end of the groups that hold the first user turn `[start, end)`: the turn kept as whole groups. */
export function firstTurnGroupsEnd(h: PreparedHistory, turn: readonly [number, number]): number {
  const last = turn[1] - 1;
  return last < 0 ? -1 : (h.groups[h.groupOf[last] as number] as { end: number }).end;
}
