import {
  type Artifact,
  type ArtifactStore,
  type ArtifactUse,
  checkFits,
  contentBytes,
  type KeptArtifacts,
  type NewArtifact,
  type RecentLimit,
  type StoreOptions,
  type StoreUsage,
} from './types.js';

interface Entry {
  readonly artifact: Artifact;
  readonly bytes: number;
}

/**
 * An in-process store: nothing survives a restart. Expired entries are swept as it grows. With a
 * cap, the least recently used entries are evicted to make room: the map keeps the order of use
 * (an entry stored again or read as a use is moved to the end), so eviction takes from its front
 * and never scans.
 */
export class MemoryStore implements ArtifactStore {
  readonly kind = 'memory' as const;
  /** Keyed by scope and id (a NUL cannot occur in either), least recently used first. */
  private readonly entries = new Map<string, Entry>();
  private readonly maxBytes: number;
  private bytes = 0;
  private evicted = 0;
  private nextSweep = 0;
  private installed: string | undefined;
  /** `claim`'s claims, keyed as `entries`, with their expiry. */
  private readonly claims = new Map<string, number>();

  constructor(options: StoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 0;
  }

  async put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    checkFits(artifacts, this.maxBytes, kept?.bytes);
    const expires = now + ttlSeconds * 1000;
    // Kept originals are vouched for here exactly: each one held is marked used now (moved to the end).
    const missing = kept?.ids.filter((id) => !this.live(`${scope}\0${id}`, now));
    if (missing && missing.length > 0) return missing;
    if (now >= this.nextSweep) this.sweep(now);
    const written = new Set<string>();
    for (const id of kept?.ids ?? []) {
      const key = `${scope}\0${id}`;
      written.add(key);
      this.use(key, this.entries.get(key) as Entry, 0);
    }
    for (const a of artifacts) {
      const key = `${scope}\0${a.id}`;
      written.add(key);
      const existing = this.entries.get(key);
      if (existing && existing.artifact.expires_at > now) {
        this.use(key, existing, expires);
        continue;
      }
      if (existing) this.remove(key, existing);
      const bytes = contentBytes(a);
      this.entries.set(key, { artifact: { ...a, created_at: now, expires_at: expires }, bytes });
      this.bytes += bytes;
    }
    this.evict(written, now);
    return undefined;
  }

  private live(key: string, now: number): boolean {
    return (this.entries.get(key)?.artifact.expires_at ?? 0) > now;
  }

  /** Makes an entry the most recently used, its expiry at least `expires`; returns it as it is now. */
  private use(key: string, entry: Entry, expires: number): Entry {
    const artifact = { ...entry.artifact, expires_at: Math.max(entry.artifact.expires_at, expires) };
    const used = { ...entry, artifact };
    this.entries.delete(key);
    this.entries.set(key, used);
    return used;
  }

  /**
   * Deletes the least recently used entries until the cap holds, sparing the ones this put wrote;
   * expired entries met on the way go too, without counting as evictions.
   */
  private evict(spare: ReadonlySet<string>, now: number): void {
    if (this.maxBytes <= 0) return;
    for (const [key, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) return;
      if (spare.has(key)) continue;
      this.remove(key, entry);
      if (entry.artifact.expires_at > now) this.evicted++;
    }
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.entries) if (entry.artifact.expires_at <= now) this.remove(key, entry);
    for (const [key, expires] of this.claims) if (expires <= now) this.claims.delete(key);
    this.nextSweep = now + 60_000;
  }

  private remove(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  async get(scope: string, ids: readonly string[], now: number, use?: ArtifactUse): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    for (const id of ids) {
      const key = `${scope}\0${id}`;
      let entry = this.entries.get(key);
      if (!entry || entry.artifact.expires_at <= now) continue;
      if (use) entry = this.use(key, entry, now + use.ttlSeconds * 1000);
      out.set(id, entry.artifact);
    }
    return out;
  }

  async recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]> {
    const wanted = new Set(kinds);
    const out: Artifact[] = [];
    let bytes = 0;
    // The map holds the least recently used first: walk it from its end.
    const all = [...this.entries.entries()];
    for (let i = all.length - 1; i >= 0 && out.length < limit.count; i--) {
      const [key, entry] = all[i] as [string, Entry];
      if (!key.startsWith(`${scope}\0`) || entry.artifact.expires_at <= now || !wanted.has(entry.artifact.kind)) continue;
      if (bytes + entry.bytes > limit.bytes && out.length > 0) break;
      bytes += entry.bytes;
      out.push(entry.artifact);
    }
    return out;
  }

  async secret(candidate: string): Promise<string> {
    this.installed ??= candidate;
    return this.installed;
  }

  /** One thread owns the map, and nothing is awaited between the check and the set: atomic. */
  async claim(scope: string, id: string, ttlSeconds: number, now: number): Promise<boolean> {
    const key = `${scope}\0${id}`;
    if ((this.claims.get(key) ?? 0) > now) return false;
    if (now >= this.nextSweep) this.sweep(now);
    this.claims.set(key, now + ttlSeconds * 1000);
    return true;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async probe(): Promise<void> {}

  usage(): StoreUsage {
    return { bytes: this.bytes, maxBytes: this.maxBytes, evicted: this.evicted };
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.claims.clear();
    this.bytes = 0;
  }
}
