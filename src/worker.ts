import { AsyncLocalStorage } from 'node:async_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type MessagePort, threadId, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { Piscina } from 'piscina';
import type { Config } from './config.js';
import { CompactorError, type ErrorCode, type FieldError } from './errors.js';
import { fastSerializerCompiler, utf8Bytes } from './schemas/encode.js';
import type { Compactor } from './service/compactor.js';
import { createCompactor } from './service/create.js';
import { OPERATIONS, type OperationUrl, type Report } from './service/operations.js';
import { parseJsonBytes } from './service/request-body.js';
import { settledOver } from './service/settle.js';
import { weighOver } from './service/weigh-port.js';
import { openStore } from './store/index.js';
import { RemoteStore } from './store/remote.js';
import type { ArtifactStore } from './store/types.js';
import type { PreparedContext, PrepareRequest } from './strategies/types.js';
import { loadEncoders, relieveEncoders } from './tokens/encoders.js';

/** What the main thread gives every worker when the pool starts. */
export interface WorkerInit {
  config: Config;
  /** The installation secret the main thread resolved (ids and scopes must agree across threads). */
  secret: string;
  /** Whether the store lives in the main thread (memory, or one a test built): calls go through each task's port. */
  remoteStore: boolean;
  /** The summarizer's concurrency count (a SharedArrayBuffer): one limit for every thread. */
  summarizerSlots: Int32Array;
}

/** One request's work: the raw body, moved (not copied) to the worker. */
export interface Task {
  url: OperationUrl;
  body: Uint8Array;
  /** SHA-256 digest of the validated API key, or null. */
  keyDigest: Uint8Array | null;
  deadlineMs: number;
  requestId: string;
  /** With a remote store: this task's channel to it. */
  port?: MessagePort;
  /** The caller's prepared summaries (the main thread keeps them), without their `settled`, */
  prepared?: PreparedContext;
  /** which this port answers (`settle.ts`). */
  settledPort?: MessagePort;
  /** Where what the task loads from the store is weighed (`Call.weigh`, `weigh-port.ts`): an MCP read's. */
  weighPort?: MessagePort;
}

/** How a task failed, as plain data: a problem for the client, or an internal error for the log. */
export type Failure =
  | { kind: 'problem'; code: ErrorCode; detail: string; errors?: FieldError[]; retryAfterSeconds?: number }
  | { kind: 'internal'; message: string; stack?: string | undefined };

export type TaskResult =
  | {
      ok: true;
      payload: Uint8Array;
      report?: Report | undefined;
      /** What fit asked to prepare and spliced in: the main thread's preparer acts on them. */
      prepare?: PrepareRequest | undefined;
      spliced?: string | undefined;
      splicedAt?: number | undefined;
      /** For each output message, its input message or -1 (strategies; the proxy reads it). */
      sources?: number[] | undefined;
      elapsedMs: number;
      evicted: number;
    }
  | { ok: false; failure: Failure; report?: undefined; elapsedMs: number; evicted: number };

const init = workerData as WorkerInit;
// The tokenizers load with the thread (the pool's warm-up waits for it), not with its first request.
loadEncoders();
/** Bodies of at least this many bytes are followed by a full collection. */
const LARGE = 4 * 1024 * 1024;
// V8's collector, reached without starting the whole process with --expose-gc (a worker may not).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: { type: string; execution: string }) => void;
const collect = (): void => {
  // After the answer is posted: the collection delays no response.
  setImmediate(() => gc({ type: 'major', execution: 'sync' }));
};
const taskPort = new AsyncLocalStorage<MessagePort | undefined>();
let compactor: Promise<Compactor> | undefined;
/** This thread's store (its own SQLite connection or Redis client): it counts the evictions it makes. */
let ownStore: ArtifactStore | undefined;
/** Evictions already reported to the main thread. */
let reportedEvictions = 0;

/** Evictions this thread's store made since the last report (the main thread's metrics add them up). */
function newEvictions(): number {
  // Counted by this connection: no query of the store's total after every task.
  const total = ownStore?.evictions?.() ?? ownStore?.usage()?.evicted ?? 0;
  const fresh = total - reportedEvictions;
  reportedEvictions = total;
  return fresh;
}

async function build(): Promise<Compactor> {
  const { config } = init;
  // The main thread created the store at boot: a SQLite file missing now was deleted under the service.
  const options = { maxBytes: config.COMPACTOR_STORE_MAX_BYTES, keyPrefix: `${config.COMPACTOR_STORE_PREFIX}:`, mustExist: true };
  if (!init.remoteStore) ownStore = await openStore(config.COMPACTOR_STORE_URL, options);
  const store: ArtifactStore = ownStore ?? new RemoteStore(() => taskPort.getStore());
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'compactor', worker: threadId } });
  return createCompactor(config, { store, secret: init.secret, logger, summarizerSlots: init.summarizerSlots });
}

/** Each operation's answer serializer, compiled on its first answer (the routes' own, `schemas/encode.ts`). */
const serializers = new Map<OperationUrl, (data: unknown) => string>();
function serializerOf(url: OperationUrl): (data: unknown) => string {
  let serialize = serializers.get(url);
  if (!serialize) {
    serialize = fastSerializerCompiler({ schema: OPERATIONS[url].response, method: 'POST', url });
    serializers.set(url, serialize);
  }
  return serialize;
}

/** Parses, validates (the route's own schema, the same validator as in line), runs and serializes one request. */
async function perform(task: Task): Promise<TaskResult> {
  const op = OPERATIONS[task.url];
  const bytes = Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength);
  const body = parseJsonBytes(bytes);
  // The bytes are not needed once parsed and tagged: let them go before the work that needs the memory.
  task.body = new Uint8Array(0);
  compactor ??= build();
  const core = await compactor;
  const outcome = await op.perform(core, body, {
    signal: AbortSignal.timeout(task.deadlineMs),
    caller: core.caller(task.keyDigest),
    prepared: task.prepared && task.settledPort ? { ...task.prepared, settled: settledOver(task.settledPort) } : task.prepared,
    weigh: task.weighPort ? weighOver(task.weighPort) : undefined,
  });
  const json = serializerOf(task.url)(outcome.value);
  // Large strings get a buffer of their own (not Node's shared pool): it can be moved as it is.
  const encoded = utf8Bytes(json);
  const payload =
    encoded.byteOffset === 0 && encoded.byteLength === encoded.buffer.byteLength ? encoded : new Uint8Array(encoded);
  const { report, prepare, spliced, splicedAt, sources } = outcome;
  return { ok: true, payload, report, prepare, spliced, splicedAt, ...(sources ? { sources } : {}), elapsedMs: 0, evicted: 0 };
}

/** A result whose payload is moved to the main thread, not copied (piscina's transferable protocol). */
function moved(result: TaskResult): TaskResult {
  if (!result.ok) return result;
  const transferable = {
    [Piscina.transferableSymbol]: [result.payload.buffer],
    [Piscina.valueSymbol]: result,
  } as unknown as Parameters<typeof Piscina.move>[0];
  return Piscina.move(transferable) as unknown as TaskResult;
}

/**
 * The worker thread's entry (piscina): runs one request off the main thread, so that the main
 * thread keeps answering health probes and accepting connections while a large history is read,
 * counted, rewritten and written back.
 */
export default async function run(task: Task): Promise<TaskResult> {
  const large = task.body.byteLength >= LARGE;
  const started = performance.now();
  const elapsedMs = () => performance.now() - started;
  try {
    const result = await taskPort.run(task.port, () => perform(task));
    return moved({ ...result, elapsedMs: elapsedMs(), evicted: newEvictions() });
  } catch (error) {
    if (error instanceof CompactorError) {
      const { code, message: detail, errors, retryAfterSeconds } = error;
      const failure: Failure = { kind: 'problem', code, detail, ...(errors ? { errors } : {}) };
      if (retryAfterSeconds !== undefined) failure.retryAfterSeconds = retryAfterSeconds;
      return { ok: false, failure, elapsedMs: elapsedMs(), evicted: newEvictions() };
    }
    const e = error instanceof Error ? error : new Error(String(error));
    return {
      ok: false,
      failure: { kind: 'internal', message: e.message, stack: e.stack },
      elapsedMs: elapsedMs(),
      evicted: newEvictions(),
    };
  } finally {
    task.port?.close();
    task.settledPort?.close();
    task.weighPort?.close();
    // What the tokenizer cached for this task is not kept while the thread idles (issue 39 #10).
    relieveEncoders();
    // A large request leaves a large heap of garbage: collect it now, off the main thread, so the
    // worker's memory goes back down instead of waiting for V8's next major collection.
    if (large) collect();
  }
}
