import pTimeout from 'p-timeout';
import { openStore } from './index.js';
import { type ArtifactStore, StoreFailedError, type StoreOptions, StoreUnavailableError } from './types.js';

/** How long boot waits for the store (open, first write, the secret) before giving up, in ms. */
export const BOOT_TIMEOUT_MS = 10_000;

/**
 * The store could not be made ready at boot. `permanent`: its URL, file or credentials are wrong
 * (a configuration error: exit 78); otherwise it did not answer in time (an operational fault:
 * exit 1, and the supervisor's restart tries again).
 */
export class StoreBootError extends Error {
  override name = 'StoreBootError';
  constructor(
    /** What boot was doing: opening the store, writing to it, or reading the installation secret. */
    readonly stage: 'open' | 'write' | 'secret',
    readonly kind: string,
    override readonly cause: StoreUnavailableError | StoreFailedError,
  ) {
    super(`the ${kind} artifact store ${cause.problem}`);
  }

  get permanent(): boolean {
    return this.cause instanceof StoreFailedError;
  }
}

/** Runs one boot step against the store within `timeoutMs`, turning its failure into a `StoreBootError`. */
export async function bootStep<T>(
  stage: StoreBootError['stage'],
  kind: string,
  step: () => Promise<T>,
  timeoutMs = BOOT_TIMEOUT_MS,
): Promise<T> {
  const late = (): never => {
    throw new StoreUnavailableError(`${kind} ${stage} timed out`, `did not answer within ${timeoutMs} ms`);
  };
  try {
    return await pTimeout(step(), { milliseconds: Math.max(1, timeoutMs), fallback: late });
  } catch (error) {
    if (error instanceof StoreUnavailableError || error instanceof StoreFailedError) throw new StoreBootError(stage, kind, error);
    throw error;
  }
}

/**
 * Opens the store `url` names and proves it takes writes, within `timeoutMs`: a read-only file or
 * a Redis replica fails here, at boot, not on the first request. Throws `StoreBootError`.
 */
export async function openWritableStore(url: string, options: StoreOptions, timeoutMs = BOOT_TIMEOUT_MS): Promise<ArtifactStore> {
  const kind = url.startsWith('sqlite:') ? 'sqlite' : url.startsWith('redis') ? 'redis' : 'memory';
  const store = await bootStep('open', kind, () => openStore(url, options), timeoutMs);
  try {
    await bootStep('write', kind, () => store.probe(Date.now()), timeoutMs);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
