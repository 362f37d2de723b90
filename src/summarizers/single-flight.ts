/**
 * Identical work in flight at once is done once (Go's `x/sync/singleflight`). The first caller
 * with a key starts it; callers that arrive with the same key while it runs share its outcome,
 * success or failure. A success lingers for `lingerMs` afterwards, so that callers arriving before
 * the caller has stored the result (the summary cache) still share it; a failure is not remembered.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Promise<T>>();
  private readonly lingering = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly lingerMs = 10_000,
    private readonly maxLingering = 256,
  ) {}

  /** The flight for `key`: `joined` is false for the caller whose `start` runs it. */
  run(key: string, start: () => Promise<T>): { result: Promise<T>; joined: boolean } {
    const inFlight = this.flights.get(key);
    if (inFlight) return { result: inFlight, joined: true };
    const result = (async () => start())();
    this.flights.set(key, result);
    result.then(
      () => this.linger(key, result),
      () => this.forget(key, result),
    );
    return { result, joined: false };
  }

  /** Keys in flight or lingering. */
  get size(): number {
    return this.flights.size;
  }

  private linger(key: string, result: Promise<T>): void {
    if (this.lingerMs <= 0) {
      this.forget(key, result);
      return;
    }
    if (this.lingering.size >= this.maxLingering) {
      const [oldest, timer] = this.lingering.entries().next().value as [string, ReturnType<typeof setTimeout>];
      clearTimeout(timer);
      this.lingering.delete(oldest);
      this.flights.delete(oldest);
    }
    const timer = setTimeout(() => this.forget(key, result), this.lingerMs);
    timer.unref();
    this.lingering.set(key, timer);
  }

  private forget(key: string, result: Promise<T>): void {
    if (this.flights.get(key) !== result) return;
    this.flights.delete(key);
    this.lingering.delete(key);
  }
}
