import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CompactorError } from '../../errors.js';
import type { TaskResult } from '../../worker.js';

/**
 * What crosses between the main thread and the worker pool (`worker-pool.ts`): how many workers a
 * setting makes, the worker's entry file, a body left unparsed for a worker, and a worker's failure
 * turned back into the error the in-line path throws.
 */

/**
 * Worker threads for a `COMPACTOR_WORKERS` setting: `auto` is one per core beyond the one the main
 * thread uses (at least 1, at most 4: each thread holds about 200 MiB of its own); a number is itself.
 */
export function workerCount(setting: number | 'auto', cores: number = availableParallelism()): number {
  return setting === 'auto' ? Math.min(4, Math.max(1, cores - 1)) : setting;
}

/** A request body left unparsed on the main thread: a worker parses, validates and runs it. */
export class RawBody {
  constructor(readonly bytes: Buffer) {}
}

/**
 * The worker entry: the compiled `worker.js` beside the compiled plugins. Under the test runner,
 * which loads the TypeScript sources, it is the built one in `dist/` (`npm test` builds first).
 */
export function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const compiled = here.endsWith('.ts')
    ? here.replace(/([\\/])src([\\/])(?!.*[\\/]src[\\/])/, '$1dist$2').replace(/\.ts$/, '.js')
    : here;
  return fileURLToPath(new URL('../../worker.js', `file://${compiled}`));
}

/** Turns a worker's failure back into the error the in-line path would have thrown. */
export function failureError(result: Extract<TaskResult, { ok: false }>): Error {
  const f = result.failure;
  if (f.kind === 'problem') {
    return new CompactorError(
      f.code,
      f.detail,
      f.errors,
      f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : {},
    );
  }
  const error = new Error(`worker: ${f.message}`);
  if (f.stack) error.stack = f.stack;
  return error;
}
