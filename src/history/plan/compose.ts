import type { Applied } from './apply.js';
import { atIndex, type Entry, type Plan, type Removal, type Unwritten } from './types.js';

function sumUnwritten(a: Unwritten | undefined, b: Unwritten | undefined): Unwritten | undefined {
  if (!a || !b) return a ?? b;
  return { calls: a.calls + b.calls, tokens: a.tokens + b.tokens };
}

/**
 * Plans composed on one index space: `plan` is over the input, and `entryOfView[v]` names the
 * entry of `plan` that produced message `v` of the view it leaves (the history the next stage
 * sees). Fit chains its stages this way: each plans over the previous one's view, and its plan is
 * folded into one plan over the input, applied once.
 */
export interface Composed {
  readonly plan: Plan;
  readonly entryOfView: readonly number[];
}

/** The identities made lately, by length (plans are never changed once made: one is shared). */
const identities = new Map<number, Composed>();
const IDENTITIES_KEPT = 16;

/** The composition of nothing: every input message kept, each the view's own. */
export function identity(length: number): Composed {
  const known = identities.get(length);
  if (known) return known;
  // Frozen: a reader that changed it would change every later call's (strict mode throws).
  const entries = Object.freeze(Array.from({ length }, (_, index) => Object.freeze({ index, edits: Object.freeze([]) })));
  const made: Composed = {
    plan: { entries, removed: new Map(), artifacts: Object.freeze([]) },
    entryOfView: Object.freeze(Array.from({ length }, (_, v) => v)),
  };
  if (identities.size >= IDENTITIES_KEPT) identities.delete(identities.keys().next().value as number);
  identities.set(length, made);
  return made;
}

/**
 * Folds `outer`, a plan over the view `inner` leaves (`outerApplied` is it applied there), into
 * one plan over the input. A view message the outer plan keeps is the inner entry that made it,
 * with the outer edits after the inner ones; one it removes is removed from the input (an inner
 * insert it removes is simply not written); its inserts stay; its originals' `message_index`
 * moves to the input message they came from.
 */
export function compose(inner: Composed, outer: Plan, outerApplied: Applied): Composed {
  const entries: Entry[] = [];
  const entryMap: number[] = [];
  /** Inner inserts already placed: an exchange fills two view positions but is one entry. */
  const placed = new Map<number, number>();
  const innerEntry = (v: number) => inner.plan.entries[inner.entryOfView[v] as number] as Entry;
  outer.entries.forEach((e, k) => {
    if (!('index' in e)) {
      entries.push(e);
      entryMap[k] = entries.length - 1;
      return;
    }
    const from = inner.entryOfView[e.index] as number;
    const was = innerEntry(e.index);
    if ('index' in was) {
      const key = e.key ?? was.key;
      const edits = e.edits.length === 0 ? was.edits : was.edits.length === 0 ? e.edits : [...was.edits, ...e.edits];
      entries.push(key ? { index: was.index, edits, key } : { index: was.index, edits });
    } else {
      if (e.edits.length > 0) throw new Error('a plan edits a message an earlier plan wrote: compose cannot express it');
      const at = placed.get(from);
      if (at !== undefined) {
        entryMap[k] = at;
        return;
      }
      entries.push(e.key !== undefined ? { ...was, key: e.key } : was);
      placed.set(from, entries.length - 1);
    }
    entryMap[k] = entries.length - 1;
  });
  const removed = new Map<number, Removal>(inner.plan.removed);
  for (const [v, removal] of outer.removed) {
    const was = innerEntry(v);
    if ('index' in was) removed.set(was.index, removal);
  }
  const inputIndex = (v: number) => {
    const was = innerEntry(v);
    return 'index' in was ? was.index : v;
  };
  const artifacts = [...inner.plan.artifacts, ...outer.artifacts.map((a) => atIndex(a, inputIndex(a.message_index)))];
  const unwritten = sumUnwritten(inner.plan.unwritten, outer.unwritten);
  const plan: Plan = {
    entries,
    removed,
    artifacts,
    ...(inner.plan.memo ? { memo: inner.plan.memo } : {}),
    ...(unwritten ? { unwritten } : {}),
  };
  return { plan, entryOfView: outerApplied.entryOf.map((k) => entryMap[k] as number) };
}
