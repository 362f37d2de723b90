/**
 * A bounded cache in two generations, each a plain map: new entries go into the young one; once it
 * holds half the bound it becomes the old one (the previous old one dropped whole); a hit in the
 * old generation moves the entry back into the young one. What was used within the last half of
 * the bound stays, the rest leaves oldest half first: least recently used, by halves. A lookup is
 * one or two map reads, with no list to reorder (a list-ordered LRU's bookkeeping was 4–5% of a
 * fit call, for the few hundred lookups of its messages' counts and derived values).
 */
export class Generations<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private youngSize = 0;
  private oldSize = 0;

  /**
   * @param max what both generations hold at most together, in the unit of `sizeOf`
   * @param sizeOf an entry's size (1 each by default: `max` is then a count)
   */
  constructor(
    private readonly max: number,
    private readonly sizeOf: (key: string, value: V) => number = () => 1,
  ) {}

  get(key: string): V | undefined {
    const found = this.young.get(key);
    if (found !== undefined) return found;
    const aging = this.old.get(key);
    if (aging !== undefined) {
      this.old.delete(key);
      this.oldSize -= this.sizeOf(key, aging);
      this.add(key, aging);
    }
    return aging;
  }

  set(key: string, value: V): void {
    const young = this.young.get(key);
    if (young !== undefined) {
      this.young.delete(key);
      this.youngSize -= this.sizeOf(key, young);
    } else {
      const aging = this.old.get(key);
      if (aging !== undefined) {
        this.old.delete(key);
        this.oldSize -= this.sizeOf(key, aging);
      }
    }
    this.add(key, value);
  }

  /** Entries held. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** What the entries weigh together (`sizeOf`'s unit): never more than `max`. */
  get calculatedSize(): number {
    return this.youngSize + this.oldSize;
  }

  private add(key: string, value: V): void {
    const size = this.sizeOf(key, value);
    if (size > this.max / 2) return;
    if (this.youngSize + size > this.max / 2) {
      this.old = this.young;
      this.oldSize = this.youngSize;
      this.young = new Map();
      this.youngSize = 0;
    }
    this.young.set(key, value);
    this.youngSize += size;
  }
}
