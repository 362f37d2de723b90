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

/**
 * Where offloaded originals live. Implementations: SQLite (the embedded default), Redis (shared
 * by replicas), memory (tests, ephemeral sidecars). Every artifact belongs to one caller's
 * `scope` (derived from its API key; one shared scope when no keys are configured): an id read
 * under another scope is absent, as if it had never been stored. Every method may reject with a
 * `StoreUnavailableError` when the backing service cannot be reached.
 */
export interface ArtifactStore {
  readonly kind: 'sqlite' | 'redis' | 'memory';
  /**
   * Stores artifacts under `scope` for `ttlSeconds`. Storing an id that exists keeps its content
   * and creation time and extends its expiry: the same original stored twice is one artifact.
   */
  put(scope: string, artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void>;
  /** The live (unexpired) artifacts of `scope` among `ids`; unknown, expired and foreign ids are absent. */
  get(scope: string, ids: readonly string[], now: number): Promise<Map<string, Artifact>>;
  /**
   * The installation's secret, which keys artifact ids and scopes: the one stored already, else
   * `candidate`, stored now. Replicas sharing a store agree on it; it survives restarts.
   */
  secret(candidate: string): Promise<string>;
  /** Whether the store answers right now (for readiness and diagnostics). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The store could not be reached or failed; the request may be retried. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
