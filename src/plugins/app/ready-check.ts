/** A readiness check's answer: ok, or why not (never content). */
export type CheckState = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface CachedCheckOptions {
  /** How long an answer is reused, in ms (default 1500): readiness is polled often. */
  cacheMs?: number;
  /** How long a check may take before it counts as failed, in ms (default 1000). */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * A dependency's readiness as `/health/ready` asks it, as `StoreHealth` does the store's: `check`
 * (which rejects while the dependency cannot serve) run at most once per `cacheMs`, concurrent
 * asks sharing it, never awaited past `timeoutMs` (a check still running then counts as failed,
 * and the next ask waits for it rather than starting another). Never throws.
 */
export class CachedCheck {
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private cached: { state: CheckState; at: number } | undefined;
  private running: Promise<CheckState> | undefined;

  /** @param what completes "… cannot be reached" / "… did not answer" in the reason */
  constructor(
    private readonly what: string,
    private readonly check: () => Promise<void>,
    options: CachedCheckOptions = {},
  ) {
    this.cacheMs = options.cacheMs ?? 1500;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /** The dependency's state, from a check at most `cacheMs` old, within `timeoutMs`. */
  async state(): Promise<CheckState> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return this.cached.state;
    this.running ??= this.check().then(
      () => this.keep({ ok: true }),
      () => this.keep({ ok: false, reason: `${this.what} cannot be reached` }),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<CheckState>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, reason: `${this.what} did not answer within ${this.timeoutMs} ms` }),
        this.timeoutMs,
      );
    });
    try {
      return await Promise.race([this.running, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private keep(state: CheckState): CheckState {
    this.cached = { state, at: this.now() };
    this.running = undefined;
    return state;
  }
}
