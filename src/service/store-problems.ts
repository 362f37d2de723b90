import { CompactorError, type ErrorCode } from '../errors.js';
import { StoreCapacityError, StoreFailedError, StoreUnavailableError } from '../store/types.js';

/** The codes a store failure becomes here (`storeProblem`). */
const STORE_PROBLEMS: ReadonlySet<string> = new Set<ErrorCode>([
  'CMP_ERR_STORE_UNAVAILABLE',
  'CMP_ERR_STORE_FAILED',
  'CMP_ERR_STORE_ARTIFACT_TOO_LARGE',
]);

/** Whether an error is the store's: one of its own classes, or the coded error this service made of one. */
export function isStoreProblem(error: unknown): boolean {
  if (error instanceof StoreUnavailableError || error instanceof StoreFailedError || error instanceof StoreCapacityError)
    return true;
  return error instanceof CompactorError && STORE_PROBLEMS.has(error.code);
}

/** A store failure as the client sees it, logged with its code (never content). */
export function storeProblem(
  kind: string,
  error: unknown,
  logger: { error(obj: Record<string, unknown>, msg: string): void } | undefined,
): unknown {
  if (error instanceof StoreCapacityError) {
    logger?.error(
      { store: kind, code: 'CMP_ERR_STORE_ARTIFACT_TOO_LARGE', bytes: error.bytes, max_bytes: error.maxBytes },
      'originals larger than the store cap',
    );
    return new CompactorError(
      'CMP_ERR_STORE_ARTIFACT_TOO_LARGE',
      `the originals to offload take ${error.bytes} bytes, more than the ${kind} store's cap of ${error.maxBytes} bytes (COMPACTOR_STORE_MAX_BYTES); nothing was stored: send store "inline", or ask the operator to raise the cap`,
    );
  }
  if (error instanceof StoreFailedError) {
    logger?.error({ store: kind, code: 'CMP_ERR_STORE_FAILED', err: error.message }, 'artifact store failed');
    return new CompactorError('CMP_ERR_STORE_FAILED', `the ${kind} artifact store ${error.problem}; an operator must fix it`);
  }
  if (error instanceof StoreUnavailableError) {
    logger?.error({ store: kind, code: 'CMP_ERR_STORE_UNAVAILABLE', err: error.message }, 'artifact store unavailable');
    return new CompactorError(
      'CMP_ERR_STORE_UNAVAILABLE',
      `the ${kind} artifact store ${error.problem}; retry in ${error.retryAfterSeconds} s`,
      undefined,
      { retryAfterSeconds: error.retryAfterSeconds },
    );
  }
  return error;
}
