import type { Artifact, ArtifactStore, NewArtifact } from './types.js';

/** An in-process store: nothing survives a restart. Expired entries are swept as it grows. */
export class MemoryStore implements ArtifactStore {
  readonly kind = 'memory' as const;
  /** Keyed by scope and id (a NUL cannot occur in either). */
  private readonly entries = new Map<string, Artifact>();
  private nextSweep = 0;
  private installed: string | undefined;

  async put(scope: string, artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void> {
    const expires = now + ttlSeconds * 1000;
    for (const a of artifacts) {
      const key = `${scope}\0${a.id}`;
      const existing = this.entries.get(key);
      if (existing && existing.expires_at > now) {
        this.entries.set(key, { ...existing, expires_at: Math.max(existing.expires_at, expires) });
      } else {
        this.entries.set(key, { ...a, created_at: now, expires_at: expires });
      }
    }
    if (now >= this.nextSweep) {
      for (const [key, a] of this.entries) if (a.expires_at <= now) this.entries.delete(key);
      this.nextSweep = now + 60_000;
    }
  }

  async get(scope: string, ids: readonly string[], now: number): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    for (const id of ids) {
      const a = this.entries.get(`${scope}\0${id}`);
      if (a && a.expires_at > now) out.set(id, a);
    }
    return out;
  }

  async secret(candidate: string): Promise<string> {
    this.installed ??= candidate;
    return this.installed;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }
}
