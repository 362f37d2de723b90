import { Redis, type Result } from 'ioredis';
import { classifyRedis } from './redis-faults.js';
import { PUT_SCRIPT, USE_SCRIPT } from './redis-scripts.js';
import type {
  Artifact,
  ArtifactStore,
  ArtifactUse,
  KeptArtifacts,
  NewArtifact,
  RecentLimit,
  StoreOptions,
  StoreUsage,
} from './types.js';
import { checkFits, contentBytes, StoreFailedError } from './types.js';
import { UseMarks } from './use-marks.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    compactorPut(...args: (string | number)[]): Result<[number, number], Context>;
    compactorUse(...args: (string | number)[]): Result<(string | number | null)[], Context>;
  }
}

/** Every key starts with this unless `keyPrefix` says otherwise (the layout of earlier versions). */
const DEFAULT_PREFIX = 'compactor:';

/**
 * Redis, for replicas that share artifacts: an artifact offloaded by one replica is expanded by
 * another. Each artifact is one key with a TTL (`<prefix>art:<scope>:<id>`; a scope is hex or
 * `shared`); beside them, when each was last used and its size (`redis-scripts.ts`), and the
 * installation secret, without a TTL (so a `volatile-*` eviction policy never takes it). A put and
 * a read that is a use each run one Lua script, atomic on the server: with a cap (`maxBytes`), a
 * put evicts the least recently used artifacts, across replicas, exactly as SQLite and memory do.
 * While Redis is unreachable a command waits for at most one reconnection attempt and
 * `commandTimeout`, then fails; the client keeps reconnecting by itself, so the service recovers
 * without a restart.
 *
 * Redis's own `maxmemory` stays the backstop: the shipped deployments set the cap below it and
 * keep `noeviction` with append-only persistence, so an artifact lives its TTL unless our cap
 * evicts it (counted), and a full Redis refuses writes (503 `CMP_ERR_STORE_UNAVAILABLE`, readiness
 * off) rather than dropping the secret. An `allkeys-*` policy could evict the secret, which would
 * change every id. A Redis that lost its data gets the secret back from the next `probe`, and a
 * different one there (another replica made it meanwhile) fails the probe: readiness says so. Artifacts stored by versions before the cap are counted once stored or read
 * again, and otherwise expire by their TTL.
 */
export class RedisStore implements ArtifactStore {
  readonly kind = 'redis' as const;
  private readonly client: Redis;
  private readonly prefix: string;
  private readonly maxBytes: number;
  /** Content bytes as the last put of this client saw them (the total is shared by every replica). */
  private bytes = 0;
  private evicted = 0;
  /** Marks of use of kept originals, not yet written (`UseMarks`). */
  private readonly marks = new UseMarks();
  /** The installation secret this client read or stored (`secret`), re-asserted by each `probe`. */
  private kept: string | undefined;
  /** Why the last connection attempt failed (`ECONNREFUSED`, `WRONGPASS`, …), until one succeeds. */
  private connection: string | undefined;

  /** @throws TypeError when the URL cannot be parsed */
  constructor(url: string, options: StoreOptions = {}) {
    this.prefix = options.keyPrefix ?? DEFAULT_PREFIX;
    this.maxBytes = options.maxBytes ?? 0;
    this.client = new Redis(url, {
      lazyConnect: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    this.client.defineCommand('compactorPut', { numberOfKeys: 0, lua: PUT_SCRIPT });
    this.client.defineCommand('compactorUse', { numberOfKeys: 0, lua: USE_SCRIPT });
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
      if (error instanceof StoreFailedError) throw error;
      throw classifyRedis(what, error, this.connection);
    }
  }

  async put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    const keptIds = kept?.ids ?? [];
    if (artifacts.length === 0 && keptIds.length === 0) return undefined;
    checkFits(artifacts, this.maxBytes, kept?.bytes);
    const evictions = () => this.run('read', async () => (await this.client.get(`${this.prefix}lru:evictions`)) ?? '0');
    if (!this.marks.started) this.marks.start(await evictions());
    if (keptIds.length > 0) {
      // One small read: nothing evicted since this client last looked (by any replica), so what its
      // caller stored a moment ago is still there; their marks of use wait in memory.
      if (!this.marks.vouch(await evictions())) return keptIds;
      this.marks.add(scope, keptIds, now);
      if (artifacts.length === 0 && !this.marks.due(now)) return undefined;
    }
    // Every put that runs the script carries the marks held: its eviction sees this client's uses.
    const marks = this.marks.drain();
    const ttl = ttlSeconds * 1000;
    const args: (string | number)[] = [this.prefix, now, ttl, this.maxBytes, keptIds.length];
    for (const id of keptIds) args.push(`${scope}:${id}`);
    args.push(marks.length);
    for (const [s, id, when] of marks) args.push(`${s}:${id}`, when);
    for (const a of artifacts) {
      args.push(`${scope}:${a.id}`, JSON.stringify({ ...a, created_at: now, expires_at: now + ttl }), contentBytes(a));
    }
    const [evicted, total] = await this.run('write', () => this.client.compactorPut(...args));
    this.evicted += Number(evicted);
    this.bytes = Number(total);
    return undefined;
  }

  /**
   * The most recently used members of the shared LRU index that are this scope's (at most 16
   * times `limit.count` members are looked at, so a busy Redis is read in bounded time), read in
   * one MGET.
   */
  async recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]> {
    if (kinds.length === 0 || limit.count <= 0) return [];
    const wanted = new Set(kinds);
    const members = await this.run('read', () => this.client.zrevrange(`${this.prefix}lru`, 0, limit.count * 16 - 1));
    const own = members.filter((m) => m.startsWith(`${scope}:`)).slice(0, limit.count * 4);
    if (own.length === 0) return [];
    const values = await this.run('read', () => this.client.mget(...own.map((m) => `${this.prefix}art:${m}`)));
    const out: Artifact[] = [];
    let bytes = 0;
    for (const value of values) {
      if (value === null) continue;
      const artifact = JSON.parse(value) as Artifact;
      if (artifact.expires_at <= now || !wanted.has(artifact.kind)) continue;
      const size = contentBytes(artifact);
      if ((bytes + size > limit.bytes && out.length > 0) || out.length >= limit.count) break;
      bytes += size;
      out.push(artifact);
    }
    return out;
  }

  async get(scope: string, ids: readonly string[], now: number, use?: ArtifactUse): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    if (ids.length === 0) return out;
    const members = ids.map((id) => `${scope}:${id}`);
    let found: (readonly [string | null, number | null])[] | undefined;
    if (use) {
      try {
        const flat = await this.client.compactorUse(this.prefix, now, use.ttlSeconds * 1000, ...members);
        found = ids.map((_, i) => [flat[2 * i] as string | null, flat[2 * i + 1] as number | null] as const);
      } catch (error) {
        // A Redis that refuses writes (full under noeviction, a read-only replica) still answers
        // reads; a Redis that cannot be reached would not answer them either.
        if (!(error instanceof Error && error.name === 'ReplyError')) throw classifyRedis('read', error, this.connection);
      }
    }
    found ??= await this.run('read', async () => {
      const keys = members.map((m) => `${this.prefix}art:${m}`);
      const [values, ttls] = await Promise.all([this.client.mget(keys), Promise.all(keys.map((key) => this.client.pttl(key)))]);
      return values.map((v, i) => [v, ttls[i] ?? null] as const);
    });
    found.forEach(([value, ttl], i) => {
      if (value === null) return;
      const stored = JSON.parse(value) as Artifact;
      // The key's TTL is the truth: a later put or use may have extended it.
      const expires = typeof ttl === 'number' && ttl > 0 ? now + ttl : stored.expires_at;
      out.set(ids[i] as string, { ...stored, expires_at: expires });
    });
    return out;
  }

  async secret(candidate: string): Promise<string> {
    return this.run('secret', async () => {
      const key = `${this.prefix}secret`;
      await this.client.set(key, candidate, 'NX');
      const value = await this.client.get(key);
      if (value === null) throw new Error('the secret was not kept');
      this.kept = value;
      return value;
    });
  }

  /**
   * Writes the installation secret this client agreed on back if Redis lost it (restarted without
   * persistence, flushed), so that a replica started later agrees on it too; a different secret
   * there (a replica started meanwhile made one) is a split that no retry mends: ids and markers
   * of one replica would be unknown to the other.
   * @throws StoreFailedError on a mismatch
   */
  private async reassert(): Promise<void> {
    if (this.kept === undefined) return;
    const key = `${this.prefix}secret`;
    // Two commands rather than SET … NX GET, which Redis before 7.0 refuses.
    if ((await this.client.set(key, this.kept, 'NX')) === 'OK') return;
    const held = await this.client.get(key);
    if (held !== null && held !== this.kept) {
      throw new StoreFailedError(
        'redis holds another installation secret',
        "holds another installation secret than this replica's (Redis lost its data and another replica made a new one): restart this replica, or set COMPACTOR_ARTIFACT_SECRET on every replica",
      );
    }
  }

  /** One `SET NX PX`: Redis answers OK to the first replica that sets the key, nil to the rest. */
  async claim(scope: string, id: string, ttlSeconds: number): Promise<boolean> {
    const key = `${this.prefix}claim:${scope}:${id}`;
    return this.run('claim', async () => (await this.client.set(key, '1', 'PX', ttlSeconds * 1000, 'NX')) === 'OK');
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /** A small write, and the installation secret re-asserted (`reassert`): readiness fails on a split. */
  async probe(now: number): Promise<void> {
    await this.run('probe', async () => {
      await this.client.set(`${this.prefix}probe`, String(now), 'PX', 60_000);
      await this.reassert();
    });
  }

  /** The bytes as this client's last put saw them (every replica shares the total), the cap, this client's evictions. */
  usage(): StoreUsage {
    return { bytes: this.bytes, maxBytes: this.maxBytes, evicted: this.evicted };
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
