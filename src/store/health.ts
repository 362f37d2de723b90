import pTimeout from 'p-timeout';
import { type ArtifactStore, StoreFailedError, StoreUnavailableError } from './types.js';

/** Whether the store takes writes, as readiness reports it. */
export type StoreState =
  | { readonly ok: true }
  | { readonly ok: false; readonly status: 'store_unavailable' | 'store_failed'; readonly reason: string };

export interface StoreHealthOptions {
  /** How long an answer is reused, in ms (default 1500): a probe per readiness check would cost a write each. */
  cacheMs?: number;
  /** How long a probe may take before the store counts as not answering, in ms (default 1000). */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Readiness of the store: a small write (`store.probe`), its answer reused for `cacheMs`, and
 * never awaited past `timeoutMs` (a probe still running then counts as "did not answer", and the
 * next check waits for it rather than starting another). Concurrent checks share one probe. Never
 * throws.
 */
export class StoreHealth {
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private cached: { state: StoreState; at: number } | undefined;
  private running: Promise<StoreState> | undefined;

  constructor(
    private readonly store: ArtifactStore,
    options: StoreHealthOptions = {},
  ) {
    this.cacheMs = options.cacheMs ?? 1500;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /** The store's state, from a probe at most `cacheMs` old, within `timeoutMs`. */
  async check(): Promise<StoreState> {
    const now = this.now();
    if (this.cached && now - this.cached.at < this.cacheMs) return this.cached.state;
    this.running ??= this.probe(now).then((state) => {
      this.cached = { state, at: this.now() };
      this.running = undefined;
      return state;
    });
    return pTimeout(this.running, {
      milliseconds: Math.max(1, this.timeoutMs),
      fallback: (): StoreState => ({
        ok: false,
        status: 'store_unavailable',
        reason: `the ${this.store.kind} store did not answer within ${this.timeoutMs} ms`,
      }),
    });
  }

  private async probe(now: number): Promise<StoreState> {
    try {
      await this.store.probe(now);
      return { ok: true };
    } catch (error) {
      return stateOf(this.store.kind, error);
    }
  }
}

/** A probe's failure as readiness reports it. */
export function stateOf(kind: string, error: unknown): StoreState {
  if (error instanceof StoreFailedError)
    return { ok: false, status: 'store_failed', reason: `the ${kind} store ${error.problem}` };
  const problem = error instanceof StoreUnavailableError ? error.problem : 'cannot be reached';
  return { ok: false, status: 'store_unavailable', reason: `the ${kind} store ${problem}` };
}
