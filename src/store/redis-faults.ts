import { StoreFailedError, StoreUnavailableError } from './types.js';

/**
 * Sorts a Redis failure into transient (`StoreUnavailableError`: unreachable, timed out, loading,
 * out of memory under `noeviction`, unable to persist; a retry may succeed) and permanent
 * (`StoreFailedError`: a read-only replica, credentials or permissions refused; an operator must
 * act). `connection` is the last connection error's code (`ECONNREFUSED`, `ENOTFOUND`, …), which
 * says why a command found no connection. The problem named holds no content and no URL.
 */
export function classifyRedis(what: string, error: unknown, connection?: string): StoreUnavailableError | StoreFailedError {
  // A transaction refused as a whole (EXECABORT) carries the reason of each refused command.
  const cause = (error as { previousErrors?: unknown[] } | null)?.previousErrors?.[0];
  const text = cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error);
  const message = `redis ${what} failed: ${text}${connection ? ` (last connection error ${connection})` : ''}`;
  const reply = /^([A-Z]+)\b/.exec(text)?.[1];
  switch (reply) {
    case 'READONLY':
      return new StoreFailedError(message, 'is read-only (a replica: writes must go to the primary)');
    case 'NOAUTH':
    case 'WRONGPASS':
      return new StoreFailedError(message, 'refuses the credentials (the URL has no password or a wrong one)');
    case 'NOPERM':
      return new StoreFailedError(message, "refuses access (the user lacks permission for the service's commands)");
    case 'OOM':
      return new StoreUnavailableError(message, 'is full (maxmemory reached and its policy, noeviction, evicts nothing)', 30);
    case 'MISCONF':
      return new StoreUnavailableError(message, 'refuses writes (it cannot persist to disk)', 30);
    case 'LOADING':
      return new StoreUnavailableError(message, 'is loading its data', 2);
  }
  if (connection && ['WRONGPASS', 'NOAUTH'].some((c) => connection.startsWith(c))) {
    return new StoreFailedError(message, 'refuses the credentials (the URL has no password or a wrong one)');
  }
  // While the connection is down, a command that waited for it times out: the connection is why.
  if (connection) return new StoreUnavailableError(message, `cannot be reached (${connection})`, 2);
  if (/timed out/i.test(text)) return new StoreUnavailableError(message, 'did not answer in time', 2);
  return new StoreUnavailableError(message, 'cannot be reached', 2);
}
