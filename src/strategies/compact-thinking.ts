import type { Draft } from '../history/plan/draft.js';
import type { Item, Warning } from '../history/types.js';
import type { PreparedHistory } from './types.js';

/** The assistant turns of a history and the one in progress. */
export interface Turns {
  /** Each turn's assistant-side messages (thinking carriers), oldest turn first; turns without any are left out. */
  readonly turns: readonly (readonly number[])[];
  /**
   * The turn after the last real user message, when the history ends inside it (a tool-use loop,
   * or an answer not yet followed by the user): its index in `turns`, or -1.
   */
  readonly current: number;
}

/**
 * Splits a history into assistant turns. A turn is everything from one real user message to the
 * next (docs/strategies.md's runs without run ids: a user message that only carries tool results is not a
 * turn), so a tool-use loop (assistant, results, assistant, …) is one turn, as Anthropic, Gemini
 * and DeepSeek-style `reasoning_content` servers count it. Messages before the first user
 * message form a turn of their own.
 */
export function assistantTurns(items: readonly Item[], head: number): Turns {
  const turns: number[][] = [];
  let open: number[] = [];
  for (let i = head; i < items.length; i++) {
    const item = items[i] as Item;
    if (item.userTurn) {
      if (open.length > 0) turns.push(open);
      open = [];
    } else if (item.role === 'assistant') {
      open.push(i);
    }
  }
  // The history ends inside the turn still open: no real user message came after it.
  if (open.length === 0) return { turns, current: -1 };
  turns.push(open);
  return { turns, current: turns.length - 1 };
}

/**
 * Removes thinking whole outside the newest `keepTurns` assistant turns (`clear_thinking`). The
 * turn in progress keeps its thinking whatever `keepTurns` says: a tool-use loop is one assistant
 * turn, and its first message must keep the thinking it started with (Anthropic rejects the call
 * or loses the thinking; Gemini and reasoning_content servers want the loop's reasoning back), so
 * `keep_turns: 0` says so in a warning. An OpenAI Responses reasoning item is removed whole, and
 * only when no item of its response names it by id; the ones kept are reported in a warning.
 */
export function clearThinking(h: PreparedHistory, keepTurns: number, w: Draft, underTarget: () => boolean): Warning[] {
  const warnings: Warning[] = [];
  const newest = h.groups[h.groups.length - 1];
  const frozenFrom = newest && newest.kind !== 'head' ? newest.start : h.items.length;
  const { turns, current } = assistantTurns(h.items, h.head);
  const cleared = turns.slice(0, Math.max(0, turns.length - keepTurns));
  const inProgress = current >= 0 && current < cleared.length ? cleared.pop() : undefined;
  const thinking = (i: number) => h.items[i]?.thinking === true && i < frozenFrom;
  if (inProgress?.some(thinking)) {
    warnings.push({
      code: 'thinking_kept',
      message: `the turn in progress (messages ${inProgress[0]}–${inProgress[inProgress.length - 1]}, since the last user message) keeps its thinking: a tool-use loop is one assistant turn, and providers require its thinking intact`,
    });
  }
  const tied: number[] = [];
  for (const index of cleared.flat()) {
    if (!thinking(index) || underTarget()) continue;
    const stripped = w.stripThinking(index);
    if (stripped !== 'whole') continue;
    // The whole item is reasoning: it goes only if nothing of its response refers to it.
    if (h.format.reasoningTie?.(h.items, index) !== undefined) tied.push(index);
    else w.remove(index, w.original(index, 'message', -1, { kind: 'thinking', tool: null, tokens: h.counts[index] as number }));
  }
  if (tied.length > 0) {
    const why = h.format.reasoningTie?.(h.items, tied[0] as number) ?? '';
    warnings.push({
      code: 'thinking_kept',
      message: `${tied.length} reasoning item(s) outside the kept turns stay (messages ${tied.join(', ')}): ${why}`,
    });
  }
  return warnings;
}
