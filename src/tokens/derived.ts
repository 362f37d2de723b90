import { Generations } from './generations.js';

/** How a derived-value cache has done since the process started. */
export interface DerivedStats {
  /** Values found (nothing computed). */
  hits: number;
  /** Values computed (and kept). */
  misses: number;
  /** Bytes held (keys and values, two per character, plus a fixed overhead per entry). */
  bytes: number;
}

/** What one entry costs beyond its key and value (the map's bookkeeping). */
const ENTRY_OVERHEAD = 64;
/**
 * Longest key kept. V8 hashes a longer string by its length alone, so many keys of one length
 * would share a bucket and every lookup would compare them all (quadratic on a hostile history):
 * a value of a longer text is computed every time (one linear pass, as without the cache).
 */
export const MAX_KEY_CHARS = 16_000;

/**
 * Values derived from content, kept by the content they come from (beside the token-count cache):
 * an agent sends the same prefix on every call, and a digest, a MAC or an artifact id computed for
 * it once is found the next time by a map lookup instead of a hash over the text. Bounded by bytes
 * (least recently used first out, by halves: `generations.ts`). A value that depends on the caller (an artifact id, a marker's
 * MAC: keyed by the installation secret and the scope) must carry that key in its cache key, so
 * that callers never share one; values of content alone (a SHA-256) are shared by everyone.
 */
export class DerivedCache {
  private readonly cache: Generations<string> | undefined;
  private hits = 0;
  private misses = 0;

  /** @param maxBytes bytes held at most; 0 disables the cache (every value is computed). */
  constructor(maxBytes: number) {
    this.cache =
      maxBytes > 0
        ? new Generations<string>(maxBytes, (key, value) => 2 * (key.length + value.length) + ENTRY_OVERHEAD)
        : undefined;
  }

  /** The value kept for `key`, or `make()`'s (kept for next time). `key` must name everything the value depends on. */
  get(key: string, make: () => string): string {
    if (key.length > MAX_KEY_CHARS) {
      this.misses++;
      return make();
    }
    const known = this.cache?.get(key);
    if (known !== undefined) {
      this.hits++;
      return known;
    }
    this.misses++;
    const value = make();
    this.cache?.set(key, value);
    return value;
  }

  stats(): DerivedStats {
    return { hits: this.hits, misses: this.misses, bytes: this.cache?.calculatedSize ?? 0 };
  }
}

/**
 * The process's cache of derived values (digests of tool-call arguments, artifact ids, marker
 * MACs): 32 MiB, shared by every request of this thread.
 */
export const derived = new DerivedCache(32 * 1024 * 1024);
