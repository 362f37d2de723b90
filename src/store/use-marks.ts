import { MARK_FLUSH_MS } from './types.js';

/**
 * Marks of use a store holds in memory rather than writing at once (`ArtifactStore.put`'s `kept`):
 * originals the caller named again without their content, each marked used at the last time it
 * was named. The store writes them in one batch before it next evicts, and at the latest
 * `MARK_FLUSH_MS` after the first of them, so that its eviction order is its callers' order of use
 * and other writers (threads, replicas) see a use within that time.
 */
export class UseMarks {
  /** By scope and id (NUL between), when each was last named. */
  private readonly marks = new Map<string, number>();
  /** When the oldest mark not yet written was taken. */
  private since = Number.POSITIVE_INFINITY;
  /** The eviction count this object last saw (`vouch`); undefined before the first look. */
  private seen: string | undefined;

  /** Whether the eviction count was read once: the store reads it before its first put (`start`). */
  get started(): boolean {
    return this.seen !== undefined;
  }

  /**
   * The eviction count read before the first put of this object writes anything: what its caller
   * learns is stored from then on was stored after that count.
   */
  start(evictions: string): void {
    this.seen ??= evictions;
  }

  /**
   * Whether the store can vouch for kept originals without reading them: only while nothing was
   * evicted from it (by any writer) since this object last looked (or started).
   */
  vouch(evictions: string): boolean {
    const same = this.seen === evictions;
    this.seen = evictions;
    return same;
  }

  add(scope: string, ids: readonly string[], now: number): void {
    for (const id of ids) this.marks.set(`${scope}\0${id}`, now);
    if (ids.length > 0 && this.since === Number.POSITIVE_INFINITY) this.since = now;
  }

  get size(): number {
    return this.marks.size;
  }

  /** Whether the oldest mark waited its longest. */
  due(now: number): boolean {
    return this.marks.size > 0 && now - this.since >= MARK_FLUSH_MS;
  }

  /**
   * The marks held, as [scope, id, when], forgotten here: a write that fails loses them, as a read
   * that cannot write loses its use (the next use marks again).
   */
  drain(): [string, string, number][] {
    const out: [string, string, number][] = [];
    for (const [key, when] of this.marks) {
      const cut = key.indexOf('\0');
      out.push([key.slice(0, cut), key.slice(cut + 1), when]);
    }
    this.marks.clear();
    this.since = Number.POSITIVE_INFINITY;
    return out;
  }
}
