/** What compaction offloaded: the original JSON value of one replaced unit, content-addressed. */
export interface Artifact {
  /** `art_` + the first 24 hex digits of `sha256`: the same original is always the same artifact. */
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
 * by replicas), memory (tests, ephemeral sidecars). Every method may reject with a
 * `StoreUnavailableError` when the backing service cannot be reached.
 */
export interface ArtifactStore {
  readonly kind: 'sqlite' | 'redis' | 'memory';
  /**
   * Stores artifacts for `ttlSeconds`. Storing an id that exists keeps its content and creation
   * time and extends its expiry: the same original stored twice is one artifact.
   */
  put(artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void>;
  /** The live (unexpired) artifacts among `ids`; unknown and expired ids are absent. */
  get(ids: readonly string[], now: number): Promise<Map<string, Artifact>>;
  /** Whether the store answers right now (for readiness and diagnostics). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The store could not be reached or failed; the request may be retried. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
