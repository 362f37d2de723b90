import { MemoryStore } from './memory.js';
import type { ArtifactStore } from './types.js';

export type { Artifact, ArtifactStore, NewArtifact } from './types.js';
export { StoreUnavailableError } from './types.js';

/**
 * Opens the store a `COMPACTOR_STORE_URL` names: `sqlite:<path>` (the default, a file created on
 * first use), `redis://…` or `rediss://…`, or `memory:`. SQLite and Redis are loaded only when
 * chosen.
 */
export async function openStore(url: string): Promise<ArtifactStore> {
  if (url === 'memory:' || url === 'memory') return new MemoryStore();
  if (url.startsWith('sqlite:')) {
    const { SqliteStore } = await import('./sqlite.js');
    return new SqliteStore(url.slice('sqlite:'.length) || ':memory:');
  }
  if (url.startsWith('redis://') || url.startsWith('rediss://')) {
    const { RedisStore } = await import('./redis.js');
    return new RedisStore(url);
  }
  throw new Error(`unsupported store URL ${JSON.stringify(url)} (expected sqlite:<path>, redis://… or memory:)`);
}
