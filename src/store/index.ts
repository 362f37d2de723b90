import { MemoryStore } from './memory.js';
import { type ArtifactStore, StoreFailedError, type StoreOptions } from './types.js';

export type { Artifact, ArtifactStore, ArtifactUse, NewArtifact, StoreOptions, StoreUsage } from './types.js';
export { StoreCapacityError, StoreFailedError, StoreUnavailableError } from './types.js';

/**
 * Opens the store a `COMPACTOR_STORE_URL` names: `sqlite:<path>` (the default, a file created on
 * first use), `redis://…` or `rediss://…`, or `memory:`. SQLite and Redis are loaded only when
 * chosen. `options.maxBytes` caps every store (least recently used evicted first).
 *
 * Throws `StoreFailedError` for a URL or file that cannot serve (unsupported or unparsable URL,
 * a folder that cannot be made, a path that is a folder, a file that is not a database, …), and
 * `StoreUnavailableError` for a SQLite file that stayed locked. A Redis is connected to in the
 * background: whether it answers shows on the first command.
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<ArtifactStore> {
  if (url === 'memory:' || url === 'memory') return new MemoryStore(options);
  if (url.startsWith('sqlite:')) {
    const { SqliteStore } = await import('./sqlite.js');
    return new SqliteStore(url.slice('sqlite:'.length) || ':memory:', options);
  }
  if (url.startsWith('redis://') || url.startsWith('rediss://')) {
    const { RedisStore } = await import('./redis.js');
    try {
      return new RedisStore(url, options);
    } catch (error) {
      throw new StoreFailedError(`redis open failed: ${(error as Error).message}`, 'has a URL that cannot be parsed');
    }
  }
  throw new StoreFailedError('unsupported store URL', 'has an unsupported URL (expected sqlite:<path>, redis://… or memory:)');
}
