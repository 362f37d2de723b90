import { Generations } from './generations.js';

/**
 * Values a cache keeps for one tagged message (`content-tag.ts`), each under a selector: the few
 * ways the message is read (a profile and a format, a format). Kept in the cache under the tag
 * itself, not a key made of the selector and the tag: a tag is the very string object the message
 * carries (a grown history's prefix takes the previous call's), so its hash is already computed and
 * a lookup reads no characters, where a key made for the lookup is joined, flattened and hashed
 * each time (ten times the cost: 0.5 µs a message, on every call, for every message).
 *
 * Laid out flat, selector then value: `[selector, value, selector, value, …]`, newest last.
 */
export type Slots<V> = (string | V)[];

/** At most this many selectors per tag: a message read more ways than that keeps its newest. */
export const MAX_SLOTS = 4;

/** The value kept under `selector`, if any (selectors are short, and usually the same string object). */
export function slotOf<V>(slots: Slots<V> | undefined, selector: string): V | undefined {
  if (slots === undefined) return undefined;
  for (let i = 0; i < slots.length; i += 2) if (slots[i] === selector) return slots[i + 1] as V;
  return undefined;
}

/** `slots` with `value` under `selector` (a new list: the cache's is never changed in place), the oldest out past `MAX_SLOTS`. */
export function withSlot<V>(slots: Slots<V> | undefined, selector: string, value: V): Slots<V> {
  // The common case as a literal of two: a list grown by `push` reserves room for 17 (152 bytes more an entry).
  if (slots === undefined) return [selector, value];
  const out: Slots<V> = [];
  if (slots !== undefined) {
    for (let i = 0; i < slots.length; i += 2) if (slots[i] !== selector) out.push(slots[i] as string, slots[i + 1] as V);
  }
  if (out.length >= 2 * MAX_SLOTS) out.splice(0, out.length - 2 * (MAX_SLOTS - 1));
  out.push(selector, value);
  return out.slice();
}

/**
 * Values by tag and selector (`Slots` under the tag), bounded in bytes: what a value costs is its
 * strings' characters (`charsOf`, two bytes each, as the tag's and the selector's) and `overhead`
 * bytes for the rest of an entry (the list and the map's bookkeeping). Least recently used out by
 * halves (`Generations`).
 */
export class ByTag<V> {
  private readonly cache: Generations<Slots<V>>;

  constructor(maxBytes: number, charsOf: (value: V) => number, overhead: number) {
    this.cache = new Generations<Slots<V>>(maxBytes, (tag, slots) => {
      let chars = tag.length;
      for (let i = 0; i < slots.length; i += 2) chars += (slots[i] as string).length + charsOf(slots[i + 1] as V);
      return 2 * chars + overhead * (slots.length / 2);
    });
  }

  /** The value kept for `selector` under `tag`, if any. */
  get(tag: string, selector: string): V | undefined {
    return slotOf(this.cache.get(tag), selector);
  }

  /** Keeps `value` for `selector` under `tag` (the tag's oldest selector out past `MAX_SLOTS`). */
  set(tag: string, selector: string, value: V): void {
    this.cache.set(tag, withSlot(this.cache.get(tag), selector, value));
  }
}
