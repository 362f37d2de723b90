import type { Applied } from './apply.js';
import type { Plan } from './types.js';

/**
 * What a plan would do, measured before anything is committed: what the cost decision compares
 * between candidate reductions. The provider's prompt cache keeps the longest unchanged prefix of
 * a request, so where a plan first changes the history matters as much as what it saves.
 */
export interface Evaluation {
  /** Input messages the plan edits or removes, ascending. */
  readonly edited: readonly number[];
  /**
   * The first output position that differs from the input (`messages.length` when nothing does):
   * every message before it is the very one that came in, still a cache hit.
   */
  readonly firstChange: number;
  /** Tokens of the messages before `firstChange` (those the prompt cache still holds). */
  readonly unchangedPrefixTokens: number;
  /**
   * Tokens of the messages after the plan's last change, kept as they came in: the part of the
   * rewrite that does not depend on how much is cleared (the next reduction starts in it).
   */
  readonly unchangedTailTokens: number;
  /** Tokens the plan frees (removed messages whole, reductions of edited ones). */
  readonly freed: number;
  /** Tokens the plan writes (summaries, joined text), the unwritten summaries' estimate included. */
  readonly added: number;
  /** `freed - added`: what the history shrinks by. */
  readonly saved: number;
  /** Summarizer calls the plan still needs (a dry run's unwritten summaries); 0 once written. */
  readonly calls: number;
}

/** Measures a plan from its rendering over the history it was made for (`applyPlan`'s result). */
export function evaluatePlan(plan: Plan, applied: Applied): Evaluation {
  const { edited } = applied;
  let firstChange = 0;
  let unchangedPrefixTokens = 0;
  for (const entry of plan.entries) {
    if (!('index' in entry) || entry.index !== firstChange || entry.edits.length > 0) break;
    unchangedPrefixTokens += applied.counts[firstChange] as number;
    firstChange++;
  }
  let unchangedTailTokens = 0;
  const last = edited.length > 0 ? (edited[edited.length - 1] as number) : Number.POSITIVE_INFINITY;
  for (let pos = applied.counts.length - 1; pos >= firstChange; pos--) {
    const source = applied.sources[pos] as number;
    if (source <= last) break;
    unchangedTailTokens += applied.counts[pos] as number;
  }
  const added = applied.added + (plan.unwritten?.tokens ?? 0);
  return {
    edited,
    firstChange,
    unchangedPrefixTokens,
    unchangedTailTokens,
    freed: applied.freed,
    added,
    saved: applied.freed - added,
    calls: plan.unwritten?.calls ?? 0,
  };
}
