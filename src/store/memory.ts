import type { Artifact, ArtifactStore, NewArtifact } from './types.js';

/** An in-process store: nothing survives a restart. Expired entries are swept as it grows. */
export class MemoryStore implements ArtifactStore {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Artifact>();
  private nextSweep = 0;

  async put(artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void> {
    const expires = now + ttlSeconds * 1000;
    for (const a of artifacts) {
      const existing = this.entries.get(a.id);
      if (existing && existing.expires_at > now) {
        this.entries.set(a.id, { ...existing, expires_at: Math.max(existing.expires_at, expires) });
      } else {
        this.entries.set(a.id, { ...a, created_at: now, expires_at: expires });
      }
    }
    if (now >= this.nextSweep) {
      for (const [id, a] of this.entries) if (a.expires_at <= now) this.entries.delete(id);
      this.nextSweep = now + 60_000;
    }
  }

  async get(ids: readonly string[], now: number): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    for (const id of ids) {
      const a = this.entries.get(id);
      if (a && a.expires_at > now) out.set(id, a);
    }
    return out;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }
}
