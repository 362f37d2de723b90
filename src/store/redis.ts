import { Redis } from 'ioredis';
import { classifyRedis } from './redis-faults.js';
import type { Artifact, ArtifactStore, NewArtifact } from './types.js';

/**
 * Keys: `compactor:art:<scope>:<id>` (a scope is hex or `shared`), each with its TTL; the
 * installation secret, without one (so a `volatile-*` eviction policy never takes it); the
 * readiness probe's marker.
 */
const PREFIX = 'compactor:art:';
const SECRET = 'compactor:secret';
const PROBE = 'compactor:probe';

/**
 * Redis, for replicas that share artifacts: an artifact offloaded by one replica is expanded by
 * another. Each artifact is one key with a TTL. While Redis is unreachable a command waits for
 * at most one reconnection attempt and `commandTimeout`, then fails; the client keeps
 * reconnecting by itself, so the service recovers without a restart.
 *
 * There is no cap of ours here: Redis's own `maxmemory` is the cap, and its eviction policy
 * decides. The shipped deployments use `noeviction` with `maxmemory` sized from the artifact TTL
 * and append-only persistence, so an artifact lives its whole TTL; a full Redis then refuses
 * writes (503 `CMP_ERR_STORE_UNAVAILABLE`, readiness off). `volatile-ttl` trades that for
 * availability: artifacts and cached summaries are evicted soonest-expiring first and reported
 * missing as expired ones are, and the secret, which has no TTL, is never evicted. An `allkeys-*`
 * policy could evict the secret, which would change every id.
 */
export class RedisStore implements ArtifactStore {
  readonly kind = 'redis' as const;
  private readonly client: Redis;
  /** Why the last connection attempt failed (`ECONNREFUSED`, `WRONGPASS`, …), until one succeeds. */
  private connection: string | undefined;

  /** @throws TypeError when the URL cannot be parsed */
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
    this.client.on('error', (error: NodeJS.ErrnoException) => {
      this.connection = error.code ?? /^[A-Z]+/.exec(error.message)?.[0] ?? 'error';
    });
    this.client.on('ready', () => {
      this.connection = undefined;
    });
  }

  private async run<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      throw classifyRedis(what, error, this.connection);
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

  async probe(now: number): Promise<void> {
    await this.run('probe', () => this.client.set(PROBE, String(now), 'PX', 60_000));
  }

  usage(): null {
    return null;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
