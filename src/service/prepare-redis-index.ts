import { Redis, type Result } from 'ioredis';
import pTimeout from 'p-timeout';
import type { JobState } from '../jobs/index.js';
import type { PreparedRange } from '../strategies/types.js';
import type { PreparedView, Usage } from './prepared-summaries.js';

/**
 * The Redis side of the replicas' prepared-summary index (`RedisPreparer`): its keys, its scripts,
 * its client and the bound on each of its calls, so that a hung Redis never holds a request.
 */

declare module 'ioredis' {
  interface RedisCommander<Context> {
    compactorPrepared(...args: (string | number)[]): Result<string[] | null, Context>;
    compactorBill(...args: (string | number)[]): Result<number, Context>;
  }
}

/**
 * Adds a range to a caller's index unless it is there (KEYS: order, ranges; ARGV: id, now, range
 * JSON, cap, TTL ms): null when known; else the ids of the oldest unbilled ranges it dropped to
 * keep `cap`. Both keys live `TTL` after the newest add.
 */
const ADD_SCRIPT = `
if redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 0 then return false end
redis.call('HSET', KEYS[2], 'r:' .. ARGV[1], ARGV[3])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
local dropped = {}
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do
    local billed = redis.call('HEXISTS', KEYS[2], 'b:' .. id)
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], 'r:' .. id, 'b:' .. id)
    if billed == 0 then table.insert(dropped, id) end
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return dropped`;

/** Marks a range billed (KEYS: ranges; ARGV: id, now): 1 for the one call that bills it, 0 after, -1 when unknown. */
const BILL_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], 'r:' .. ARGV[1]) == 0 then return -1 end
return redis.call('HSETNX', KEYS[1], 'b:' .. ARGV[1], ARGV[2])`;

export interface Stored extends PreparedRange {
  readonly created: number;
}

/** How long one Redis command may take, in ms (as the store's). */
export const REDIS_TIMEOUT_MS = 2000;
/**
 * How long one call of the preparer's may take, in ms: several commands (a hung Redis fails the
 * first at `REDIS_TIMEOUT_MS`), on a busy machine, the queue's first ones loading its scripts.
 */
export const CALL_TIMEOUT_MS = 5000;

/** What a response is told when the index or the queue did not answer. */
export const UNAVAILABLE = 'prepared summaries are unavailable (Redis did not answer in time)';

/** `op` within `CALL_TIMEOUT_MS`, else a rejection: a hung Redis never holds a request. */
export async function bounded<T>(what: string, op: () => Promise<T>): Promise<T> {
  const late = (): never => {
    throw new Error(`prepared summaries: the ${what} got no answer within ${CALL_TIMEOUT_MS} ms`);
  };
  return pTimeout(op(), { milliseconds: CALL_TIMEOUT_MS, fallback: late });
}

/** A caller's index (a hash; its order is the same key with `:order`), in one cluster slot. */
export const rangesKey = (prefix: string, scope: string) => `${prefix}:ranges:{${scope}}`;

/** The job id of a caller's range (hashed by the queue). */
export const jobKey = (scope: string, id: string) => `${scope}\0${id}`;

/** A range's state: its job's, `spliced` once billed; `failed` when its job is gone (expired or never queued). */
export function stateOf(job: JobState<Usage> | undefined, billed: boolean): PreparedView['state'] {
  if (billed) return 'spliced';
  return job?.state ?? 'failed';
}

/** The index's client, as the store's: a command that Redis does not answer (hung, unreachable) fails in time. */
export function openIndexClient(url: string, onError?: (error: unknown) => void): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: REDIS_TIMEOUT_MS,
    commandTimeout: REDIS_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  redis.on('error', (error) => onError?.(error));
  redis.defineCommand('compactorPrepared', { numberOfKeys: 2, lua: ADD_SCRIPT });
  redis.defineCommand('compactorBill', { numberOfKeys: 1, lua: BILL_SCRIPT });
  return redis;
}
