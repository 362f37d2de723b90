import { Redis } from 'ioredis';
import type { Artifact, ArtifactStore, NewArtifact } from './types.js';
import { StoreUnavailableError } from './types.js';

/** Keys: `compactor:art:<scope>:<id>` (a scope is hex or `shared`), and the installation secret. */
const PREFIX = 'compactor:art:';
const SECRET = 'compactor:secret';

/**
 * Redis, for replicas that share artifacts: an artifact offloaded by one replica is expanded by
 * another. Each artifact is one key with a TTL. While Redis is unreachable a command waits for
 * at most one reconnection attempt and `commandTimeout`, then fails; the client keeps
 * reconnecting by itself, so the service recovers without a restart.
 */
export class RedisStore implements ArtifactStore {
  readonly kind = 'redis' as const;
  private readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, {
      lazyConnect: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    // Connection errors surface on each command; the client's own event would otherwise crash.
    this.client.on('error', () => {});
  }

  private async run<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      throw new StoreUnavailableError(`redis ${what} failed: ${(error as Error).message}`);
    }
  }

  async put(scope: string, artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void> {
    if (artifacts.length === 0) return;
    const ttl = ttlSeconds * 1000;
    await this.run('write', async () => {
      const pipeline = this.client.multi();
      for (const a of artifacts) {
        const value = JSON.stringify({ ...a, created_at: now, expires_at: now + ttl });
        const key = `${PREFIX}${scope}:${a.id}`;
        pipeline.set(key, value, 'PX', ttl, 'NX');
        pipeline.pexpire(key, ttl, 'GT');
      }
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error);
      if (!results || failed) throw failed?.[0] ?? new Error('transaction aborted');
    });
  }

  async get(scope: string, ids: readonly string[], now: number): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    if (ids.length === 0) return out;
    const values = await this.run('read', async () => {
      const [values, ttls] = await Promise.all([
        this.client.mget(ids.map((id) => `${PREFIX}${scope}:${id}`)),
        Promise.all(ids.map((id) => this.client.pttl(`${PREFIX}${scope}:${id}`))),
      ]);
      return values.map((v, i) => [v, ttls[i]] as const);
    });
    values.forEach(([value, ttl], i) => {
      if (value === null) return;
      const stored = JSON.parse(value) as Artifact;
      // The key's TTL is the truth: a later put may have extended it.
      const expires = typeof ttl === 'number' && ttl > 0 ? now + ttl : stored.expires_at;
      out.set(ids[i] as string, { ...stored, expires_at: expires });
    });
    return out;
  }

  async secret(candidate: string): Promise<string> {
    return this.run('secret', async () => {
      await this.client.set(SECRET, candidate, 'NX');
      const value = await this.client.get(SECRET);
      if (value === null) throw new Error('the secret was not kept');
      return value;
    });
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
