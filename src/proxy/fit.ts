import type { FastifyRequest } from 'fastify';
import type { WorkerPool } from '../plugins/app/worker-pool.js';
import { failureError } from '../plugins/app/worker-task.js';
import type { Caller } from '../service/artifacts.js';
import type { Compactor } from '../service/compactor.js';
import { OPERATIONS, type Outcome, type PreparedStore } from '../service/operations.js';
import type { PreparedContext } from '../strategies/types.js';

/** What a proxied fit runs with: the service, where it may run, and for whom. */
export interface FitRun {
  readonly compactor: Compactor;
  /** The caller's prepared summaries, read before fit and handed what it prepared after (fit's own hook). */
  readonly preparer: PreparedStore;
  readonly pool: WorkerPool;
  /** The proxied request (its id names the worker's task). */
  readonly request: FastifyRequest;
  /** Who the artifacts and summaries belong to. */
  readonly caller: Caller;
  /** The digest the caller's scope derives from (a worker thread derives the same caller from it). */
  readonly digest: Uint8Array | null;
  readonly signal: AbortSignal;
}

/**
 * Runs a fit request as `/v1/fit` does, through the operations table: with its prepared summaries
 * around it (`OPERATIONS['/v1/fit'].around`), in line or, past the pool's rule
 * (`WorkerPool.takes`), on a worker thread, so that reading, counting and rewriting a large
 * history never stalls the streams of other calls. `perform` validates the request first.
 */
export async function runFit(run: FitRun, body: Record<string, unknown>, size?: number): Promise<Outcome> {
  const fit = OPERATIONS['/v1/fit'];
  return fit.around(run.preparer, run.caller.scope, body, async (prepared) => {
    // `size`: the body's JSON bytes, counted without serializing it (`fitBytes`); a body that stays
    // on this thread is then never serialized.
    if (size !== undefined && !run.pool.takes(run.request, size)) {
      return fit.perform(run.compactor, body, { signal: run.signal, caller: run.caller, prepared });
    }
    const bytes = Buffer.from(JSON.stringify(body));
    if (!run.pool.takes(run.request, bytes.length)) {
      return fit.perform(run.compactor, body, { signal: run.signal, caller: run.caller, prepared });
    }
    return onWorker(run, bytes, prepared);
  });
}

async function onWorker(run: FitRun, bytes: Buffer, prepared: PreparedContext | undefined): Promise<Outcome> {
  const result = await run.pool.run('/v1/fit', bytes, run.request, prepared, run.digest);
  if (!result.ok) throw failureError(result);
  const payload = Buffer.from(result.payload.buffer, result.payload.byteOffset, result.payload.byteLength);
  return {
    value: JSON.parse(payload.toString('utf8')) as unknown,
    ...(result.report ? { report: result.report } : {}),
    ...(result.prepare ? { prepare: result.prepare } : {}),
    ...(result.spliced ? { spliced: result.spliced } : {}),
    ...(result.splicedAt !== undefined ? { splicedAt: result.splicedAt } : {}),
    ...(result.sources ? { sources: result.sources } : {}),
  };
}
