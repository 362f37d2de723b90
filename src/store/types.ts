/** What a strategy offloaded: the original JSON value of one replaced unit, or a summary-cache entry. */
export interface Artifact {
  /**
   * `art_` + 24 hex digits of a keyed hash of the content (`history/address.ts`): the same
   * original from the same caller is always the same artifact, and nobody can derive an id from
   * content alone.
   */
  readonly id: string;
  /** What the unit was: `tool_result`, `tool_input`, … */
  readonly kind: string;
  readonly tool_name: string | null;
  /** The original unit as JSON text, exactly as it was replaced. */
  readonly content: string;
  /** SHA-256 (hex) of `content`. */
  readonly sha256: string;
  /** Milliseconds since the epoch. */
  readonly created_at: number;
  readonly expires_at: number;
}

export type NewArtifact = Omit<Artifact, 'created_at' | 'expires_at'>;

/** Originals a put names without their content: stored a moment ago by the same caller (`ArtifactStore.put`). */
export interface KeptArtifacts {
  /** Their ids (within the put's scope), distinct, none among the put's `artifacts`. */
  readonly ids: readonly string[];
  /** Their content bytes together, which the cap counts with the put's own (`checkFits`). */
  readonly bytes: number;
}

/** At the latest this long after the first mark of use a SQLite or Redis store holds in memory, the marks are written. */
export const MARK_FLUSH_MS = 30_000;

/** How much a capped store holds: content bytes (UTF-8 of `content`), its cap, and evictions since open. */
export interface StoreUsage {
  /** Content bytes of the artifacts held (expired ones not yet purged included). */
  readonly bytes: number;
  /** The cap on `bytes`; 0: none. */
  readonly maxBytes: number;
  /** Artifacts this store object evicted to stay under the cap since it was opened (expiry is not eviction). */
  readonly evicted: number;
}

/** Options every store accepts when opened. */
export interface StoreOptions {
  /**
   * Cap on the content bytes held (`COMPACTOR_STORE_MAX_BYTES`); the least recently used
   * artifacts are evicted to make room. 0 or unset: no cap.
   */
  readonly maxBytes?: number;
  /** Redis: the prefix of every key (default `compactor:`), so that tests and tenants of one Redis stay apart. */
  readonly keyPrefix?: string;
  /**
   * SQLite: the file must exist already (a worker thread opening the file the main thread
   * created): a missing file is a lost one, whose writes are refused, not a new empty database.
   */
  readonly mustExist?: boolean;
}

/** How much one listing of a scope's artifacts may read. */
export interface RecentLimit {
  readonly count: number;
  readonly bytes: number;
}

/**
 * A read that is a use (`GET /v1/artifacts/{id}`, `expand`, a summary-cache hit): the artifacts
 * found become the most recently used, and live at least `ttlSeconds / 2` more (extended to a
 * full `ttlSeconds` from now; SQLite rewrites a row's expiry only once less than half is left).
 */
export interface ArtifactUse {
  readonly ttlSeconds: number;
}

/**
 * Where offloaded originals live. Implementations: SQLite (the embedded default), Redis (shared
 * by replicas), memory (tests, ephemeral sidecars). Every artifact belongs to one caller's
 * `scope` (derived from its API key; one shared scope when no keys are configured): an id read
 * under another scope is absent, as if it had never been stored.
 *
 * Failures: every method may reject with a `StoreUnavailableError` (transient: the store cannot
 * be reached, is busy, timed out or is full; a retry may succeed) or a `StoreFailedError`
 * (permanent until an operator acts: read-only, corrupt, access refused); `put` also with a
 * `StoreCapacityError` when what it is given cannot fit under the cap at all.
 */
export interface ArtifactStore {
  readonly kind: 'sqlite' | 'redis' | 'memory';
  /**
   * Stores artifacts under `scope` for `ttlSeconds`. Storing an id that exists keeps its content
   * and creation time, extends its expiry and makes it the most recently used: the same original
   * stored twice is one artifact, and one offloaded again is in use. A capped store evicts the
   * least recently used artifacts (stored or read as a use longest ago) to make room, never those
   * of this put; an evicted artifact is absent, exactly as an expired one is.
   *
   * `kept` names originals of the same call that the caller stored itself a moment ago (less than
   * half a TTL, `REWRITE_AFTER_MS` at most): they are not sent again. Each is spared by this put's
   * eviction and marked used now; SQLite and Redis hold such marks in memory and write them in one
   * batch, before this object next evicts (in the same transaction or script) and at the latest
   * `MARK_FLUSH_MS` after the first of them. Returns the kept ids the store cannot vouch for (absent,
   * or something was evicted since this object last looked, by any writer): then nothing was
   * written, and the caller puts every artifact again with its content.
   */
  put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined>;
  /**
   * The live (unexpired) artifacts of `scope` among `ids`; unknown, expired, evicted and foreign
   * ids are absent. With `use`, the read is a use (`ArtifactUse`); refreshing is best effort: a
   * store that cannot write right now still answers the read.
   */
  get(scope: string, ids: readonly string[], now: number, use?: ArtifactUse): Promise<Map<string, Artifact>>;
  /**
   * The live artifacts of `scope` of the given kinds, most recently used first, until `limit.count`
   * artifacts or `limit.bytes` of content: what a search of the caller's originals reads (the MCP
   * `search` tool). Not a use: nothing is refreshed.
   */
  recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]>;
  /**
   * The installation's secret, which keys artifact ids and scopes: the one stored already, else
   * `candidate`, stored now. Replicas sharing a store agree on it; it survives restarts.
   */
  secret(candidate: string): Promise<string>;
  /**
   * Claims `id` under `scope` for `ttlSeconds`, atomically across threads and replicas: true for
   * the one call that claims it first, false while its claim lives. What bills a prepared summary
   * once when several responses splice it at the same moment.
   */
  claim(scope: string, id: string, ttlSeconds: number, now: number): Promise<boolean>;
  /** Whether the store answers reads right now (diagnostics; readiness asks `probe`). */
  ping(): Promise<boolean>;
  /**
   * Writes a small marker, as cheaply as the store allows: resolves when the store accepts
   * writes, rejects with the `StoreUnavailableError` or `StoreFailedError` a write would meet.
   */
  probe(now: number): Promise<void>;
  /** Content bytes held, the cap and this object's evictions; null where another thread's store counts (a worker's remote store). */
  usage(): StoreUsage | null;
  /** This object's evictions alone, where `usage` would ask the store for its bytes (a worker reports them after every task). */
  evictions?(): number;
  close(): Promise<void>;
}

/**
 * The store cannot serve right now, for a reason that may pass (unreachable, timed out, busy,
 * full): the request may be retried, after `retryAfterSeconds`.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  /**
   * @param message for the logs (no content, no keys)
   * @param problem what the client is told, completing "the <kind> artifact store …"
   * @param retryAfterSeconds when a retry may succeed (default 2)
   */
  constructor(
    message: string,
    readonly problem = 'cannot be reached',
    readonly retryAfterSeconds = 2,
  ) {
    super(message);
  }
}

/**
 * The store refuses for a reason that will not pass by itself (read-only file or folder, corrupt
 * database, access denied): retrying is pointless until an operator acts.
 */
export class StoreFailedError extends Error {
  override name = 'StoreFailedError';
  /**
   * @param message for the logs (no content, no keys)
   * @param problem what the client and the operator are told, completing "the <kind> artifact store …"
   */
  constructor(
    message: string,
    readonly problem: string,
  ) {
    super(message);
  }
}

/** What `put` was given is larger than the store's cap: it could never fit, whatever is evicted. */
export class StoreCapacityError extends Error {
  override name = 'StoreCapacityError';
  constructor(
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`${bytes} bytes of originals exceed the store's cap of ${maxBytes} bytes`);
  }
}

/** Content bytes of an artifact, as the cap counts them: the UTF-8 length of its JSON text. */
export function contentBytes(artifact: { content: string }): number {
  return Buffer.byteLength(artifact.content, 'utf8');
}

/**
 * Checks a batch against the cap before anything is written or evicted: a batch that could not
 * fit even in an empty store is refused whole (a half-stored batch would leave placeholders
 * that name nothing). Throws `StoreCapacityError`.
 */
export function checkFits(artifacts: readonly { id: string; content: string }[], maxBytes: number, keptBytes = 0): void {
  if (maxBytes <= 0) return;
  const seen = new Set<string>();
  let total = keptBytes;
  for (const a of artifacts) {
    if (seen.has(a.id)) continue;
    seen.add(a.id);
    total += contentBytes(a);
  }
  if (total > maxBytes) throw new StoreCapacityError(total, maxBytes);
}
