import type { MessagePort } from 'node:worker_threads';
import type { Artifact, ArtifactStore, ArtifactUse, KeptArtifacts, NewArtifact, RecentLimit, StoreUsage } from './types.js';
import { StoreCapacityError, StoreFailedError, StoreUnavailableError } from './types.js';

type Method = 'put' | 'get' | 'recent' | 'secret' | 'claim' | 'ping' | 'probe';

interface StoreRequest {
  id: number;
  method: Method;
  args: unknown[];
}

/** A store error as plain data: its class by name and the fields that class carries. */
interface WireError {
  name: string;
  message: string;
  problem?: string;
  retryAfterSeconds?: number;
  bytes?: number;
  maxBytes?: number;
}

type StoreReply = { id: number; value: unknown } | { id: number; error: WireError };

function toWire(error: unknown): WireError {
  const e = error instanceof Error ? error : new Error(String(error));
  const out: WireError = { name: e.name, message: e.message };
  if (e instanceof StoreUnavailableError) Object.assign(out, { problem: e.problem, retryAfterSeconds: e.retryAfterSeconds });
  if (e instanceof StoreFailedError) out.problem = e.problem;
  if (e instanceof StoreCapacityError) Object.assign(out, { bytes: e.bytes, maxBytes: e.maxBytes });
  return out;
}

/** The same error class on this side of the channel, so the fault is reported as it would be in line. */
function fromWire(e: WireError): Error {
  if (e.name === 'StoreUnavailableError') return new StoreUnavailableError(e.message, e.problem, e.retryAfterSeconds);
  if (e.name === 'StoreFailedError') return new StoreFailedError(e.message, e.problem ?? 'failed');
  if (e.name === 'StoreCapacityError') return new StoreCapacityError(e.bytes ?? 0, e.maxBytes ?? 0);
  return new Error(e.message);
}

/**
 * Serves a store to a worker thread over `port`: the main thread's store (an in-process memory
 * store, or one a test built) answers the worker's calls. Replies carry plain values; a failure
 * goes back by name and message, so the worker can raise the same error class.
 */
export function serveStore(port: MessagePort, store: ArtifactStore): void {
  port.on('message', (request: StoreRequest) => {
    const call = (): Promise<unknown> => {
      const [a, b, c, d, e] = request.args;
      switch (request.method) {
        case 'put':
          return store.put(a as string, b as NewArtifact[], c as number, d as number, e as KeptArtifacts | undefined);
        case 'get':
          return store.get(a as string, b as string[], c as number, d as ArtifactUse | undefined);
        case 'recent':
          return store.recent(a as string, b as string[], c as number, d as RecentLimit);
        case 'secret':
          return store.secret(a as string);
        case 'claim':
          return store.claim(a as string, b as string, c as number, d as number);
        case 'probe':
          return store.probe(a as number);
        default:
          return store.ping();
      }
    };
    call().then(
      (value) => port.postMessage({ id: request.id, value } satisfies StoreReply),
      (error: unknown) => port.postMessage({ id: request.id, error: toWire(error) } satisfies StoreReply),
    );
  });
}

/**
 * A worker thread's view of a store served by the main thread (`serveStore`): each call goes
 * through the port of the task that makes it (`portOf`), so a store that lives in the main
 * thread's memory is shared by every thread. A call made outside a task fails as unavailable.
 */
export class RemoteStore implements ArtifactStore {
  readonly kind = 'memory' as const;
  private next = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listening = new WeakSet<MessagePort>();

  constructor(private readonly portOf: () => MessagePort | undefined) {}

  private call<T>(method: Method, args: unknown[]): Promise<T> {
    const port = this.portOf();
    if (!port) return Promise.reject(new StoreUnavailableError('no store channel outside a task'));
    if (!this.listening.has(port)) {
      this.listening.add(port);
      port.on('message', (reply: StoreReply) => {
        const waiter = this.pending.get(reply.id);
        if (!waiter) return;
        this.pending.delete(reply.id);
        if ('error' in reply) waiter.reject(fromWire(reply.error));
        else waiter.resolve(reply.value);
      });
    }
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      port.postMessage({ id, method, args } satisfies StoreRequest);
    });
  }

  put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    return this.call('put', [scope, artifacts, ttlSeconds, now, kept]);
  }

  recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]> {
    return this.call('recent', [scope, kinds, now, limit]);
  }

  get(scope: string, ids: readonly string[], now: number, use?: ArtifactUse): Promise<Map<string, Artifact>> {
    return this.call('get', [scope, ids, now, use]);
  }

  secret(candidate: string): Promise<string> {
    return this.call('secret', [candidate]);
  }

  claim(scope: string, id: string, ttlSeconds: number, now: number): Promise<boolean> {
    return this.call('claim', [scope, id, ttlSeconds, now]);
  }

  ping(): Promise<boolean> {
    return this.call('ping', []);
  }

  probe(now: number): Promise<void> {
    return this.call('probe', [now]);
  }

  /** The main thread's store reports its own usage. */
  usage(): StoreUsage | null {
    return null;
  }

  async close(): Promise<void> {}
}
