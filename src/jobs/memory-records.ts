import type { JobRecords, JobState } from './types.js';

/**
 * `JobRecords` in a Map, for tests and ephemeral sidecars: gone with the process. A record read
 * after its expiry is absent (and dropped then); `maxRecords` (default 10,000) bounds the memory
 * by dropping the oldest-written records first.
 */
export class MemoryJobRecords implements JobRecords {
  private readonly records = new Map<string, { record: JobState<unknown>; expires: number }>();

  constructor(private readonly maxRecords = 10_000) {}

  async put(id: string, record: JobState<unknown>, ttlSeconds: number, now: number): Promise<void> {
    this.records.delete(id);
    this.records.set(id, { record: structuredClone(record), expires: now + ttlSeconds * 1000 });
    while (this.records.size > this.maxRecords) {
      const oldest = this.records.keys().next();
      if (oldest.done) break;
      this.records.delete(oldest.value);
    }
  }

  async get(id: string, now: number): Promise<JobState<unknown> | undefined> {
    const entry = this.records.get(id);
    if (!entry) return undefined;
    if (entry.expires <= now) {
      this.records.delete(id);
      return undefined;
    }
    return structuredClone(entry.record);
  }

  /** Records held, expired ones not yet read included (tests). */
  get size(): number {
    return this.records.size;
  }
}
