import { LRUCache } from 'lru-cache';
import { CompactorError, fieldError } from '../errors.js';
import type { Addresser } from '../history/address.js';
import type { ArtifactKind } from '../history/artifact-kinds.js';
import { type ExpandResult, expandHistory } from '../history/expand.js';
import type { FormatAdapter } from '../history/format.js';
import type { Markers } from '../history/markers.js';
import { ARTIFACT_ID } from '../history/vocabulary.js';
import {
  type Artifact,
  type ArtifactStore,
  type ArtifactUse,
  contentBytes,
  type NewArtifact,
  type RecentLimit,
} from '../store/types.js';
import { storeProblem } from './store-problems.js';

export { isStoreProblem } from './store-problems.js';

/** How long an original this service stored is taken as still there (not written again): see `ArtifactService.stored`. */
export const REWRITE_AFTER_MS = 60_000;

/** An offloaded original as `GET /v1/artifacts/{id}` returns it. */
export interface ArtifactView {
  id: string;
  kind: string;
  tool_name: string | null;
  content: unknown;
  sha256: string;
  created_at: string;
  expires_at: string;
}

/** Who is asking: the scope their artifacts live in, how their artifact ids are made, and their markers. */
export interface Caller {
  readonly scope: string;
  readonly address: Addresser;
  /** Signs and verifies the markers later calls honour (summaries, section summaries, QA headers). */
  readonly markers: Markers;
}

export interface ArtifactServiceOptions {
  store?: ArtifactStore | undefined;
  ttlSeconds: number;
  /** Most bytes of originals one expand restores (`COMPACTOR_EXPAND_MAX_BYTES`); 0: no cap. */
  expandMaxBytes?: number;
  logger?: { error(obj: Record<string, unknown>, msg: string): void } | undefined;
  now: () => number;
}

/**
 * Offloaded originals: persisting what a strategy offloaded, restoring placeholders (`expand`) and
 * reading one original, always within the caller's scope (another caller's ids are unknown here).
 * Store failures become problems here, in one place: transient ones 503
 * `CMP_ERR_STORE_UNAVAILABLE` with `retry-after`, permanent ones 500 `CMP_ERR_STORE_FAILED`
 * (no "retry later": an operator must act), originals larger than the cap 507
 * `CMP_ERR_STORE_ARTIFACT_TOO_LARGE`. Each detail names the problem, never content or paths.
 */
export class ArtifactService {
  /**
   * When each original this service stored was sent to the store, and its content bytes (by scope
   * and id): a growing conversation offloads the same originals on every call, and one sent less
   * than `REWRITE_AFTER_MS` ago is not sent again. Without a cap nothing is sent for it (no query,
   * no row touched, no bytes to Redis). Under a cap its id goes along as kept (`ArtifactStore.put`):
   * spared by the put's eviction and marked used (in memory, written in a batch before the store
   * evicts), so that eviction spares what the agent still sends; a store that cannot vouch for it
   * (something was evicted since) has every original of the call sent again, and this record is
   * forgotten. The interval is short so that a store emptied under the service heals within a minute.
   */
  private readonly stored = new LRUCache<string, { at: number; bytes: number }>({ max: 100_000 });
  /** Whether the store has no cap (asked once: a SQLite store reads its total to answer). */
  private uncapped: boolean | undefined;

  constructor(private readonly options: ArtifactServiceOptions) {}

  private async call<T>(op: (store: ArtifactStore) => Promise<T>): Promise<T> {
    const { store } = this.options;
    if (!store) throw new CompactorError('CMP_ERR_STORE_UNAVAILABLE', 'no artifact store is configured');
    try {
      return await op(store);
    } catch (error) {
      throw storeProblem(store.kind, error, this.options.logger);
    }
  }

  /** Every read here is a use: what is read becomes the most recently used and lives another TTL. */
  private use(): ArtifactUse {
    return { ttlSeconds: this.options.ttlSeconds };
  }

  /** Stores originals for the configured TTL (the same original twice is one artifact, in use again). */
  async persist(caller: Caller, artifacts: readonly NewArtifact[]): Promise<void> {
    const now = this.options.now();
    const ttl = this.options.ttlSeconds;
    const recent = Math.min(REWRITE_AFTER_MS, (ttl * 1000) / 2);
    this.uncapped ??= this.options.store?.usage()?.maxBytes === 0;
    const fresh: NewArtifact[] = [];
    const kept = new Set<string>();
    let keptBytes = 0;
    for (const a of artifacts) {
      const sent = this.stored.get(`${caller.scope}\0${a.id}`);
      if (sent === undefined || now - sent.at >= recent) fresh.push(a);
      else if (!kept.has(a.id)) {
        kept.add(a.id);
        keptBytes += sent.bytes;
      }
    }
    if (this.uncapped) kept.clear();
    if (fresh.length === 0 && kept.size === 0) return;
    const resend = await this.call((store) =>
      store.put(caller.scope, fresh, ttl, now, kept.size > 0 ? { ids: [...kept], bytes: keptBytes } : undefined),
    );
    let sent: readonly NewArtifact[] = fresh;
    if (resend !== undefined && resend.length > 0) {
      // Something was evicted since these were sent: what this service took as stored may not be.
      this.stored.clear();
      await this.call((store) => store.put(caller.scope, artifacts, ttl, now));
      sent = artifacts;
    }
    for (const a of sent) this.stored.set(`${caller.scope}\0${a.id}`, { at: now, bytes: contentBytes(a) });
  }

  /** Stores entries if the store answers; returns whether it failed (the failure is logged, not thrown). */
  async persistQuietly(caller: Caller, artifacts: readonly NewArtifact[]): Promise<boolean> {
    if (artifacts.length === 0 || !this.options.store) return false;
    try {
      await this.persist(caller, artifacts);
      return false;
    } catch {
      return true;
    }
  }

  /** Stored records by id, as they are (no use: their TTL runs on); store failures become coded errors. */
  async records(caller: Caller, ids: readonly string[]): Promise<ReadonlyMap<string, Artifact>> {
    if (ids.length === 0) return new Map();
    return this.call((store) => store.get(caller.scope, ids, this.options.now()));
  }

  /** Stored contents by id, read as a use; empty when the store cannot answer (callers treat it as a miss). */
  async recall(caller: Caller, ids: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!this.options.store || ids.length === 0) return out;
    try {
      for (const [id, a] of await this.options.store.get(caller.scope, ids, this.options.now(), this.use())) {
        out.set(id, a.content);
      }
    } catch {
      // A cache miss: the caller recomputes.
    }
    return out;
  }

  /**
   * What an expand will restore, weighed before it is restored (a body of a few kilobytes can name
   * one original many times): every restored original's bytes (`sizes`, by id) count against
   * `expandMaxBytes` (413 `CMP_ERR_EXPAND_TOO_LARGE` past it) and, through `reserve`, against the
   * bytes in flight. The returned function takes the ids about to be restored, one per placeholder.
   */
  private weigher(sizes: ReadonlyMap<string, number>, reserve: ((bytes: number) => void) | undefined) {
    const cap = this.options.expandMaxBytes ?? 0;
    let total = 0;
    const check = (bytes: number) => {
      if (cap > 0 && bytes > cap) {
        const detail = `the originals to restore take at least ${bytes} bytes, over COMPACTOR_EXPAND_MAX_BYTES=${cap}: expand a shorter part of the history at a time`;
        throw new CompactorError('CMP_ERR_EXPAND_TOO_LARGE', `messages: ${detail}`, [{ path: 'messages', message: detail }]);
      }
    };
    return {
      /** The distinct originals read so far, before they are parsed: none is parsed once they pass the cap. */
      loaded: (bytes: number) => check(bytes),
      restore: (ids: readonly string[]) => {
        let bytes = 0;
        for (const id of ids) bytes += sizes.get(id) ?? 0;
        total += bytes;
        check(total);
        reserve?.(bytes);
      },
    };
  }

  /**
   * Claims `id` for the caller, once across threads and replicas (`ArtifactStore.claim`), for the
   * artifacts' TTL. Without a store, or while it cannot answer, every call claims it: a bill is
   * not dropped for an outage (the preparer's own index still bills a summary once in sequence).
   */
  async claim(caller: Caller, id: string): Promise<boolean> {
    if (!this.options.store) return true;
    try {
      return await this.options.store.claim(caller.scope, id, this.options.ttlSeconds, this.options.now());
    } catch {
      return true;
    }
  }

  /**
   * Restores every placeholder whose artifact is known, from the request's own `artifacts` (what
   * `store: "inline"` returned; each checked against the id the caller's addresser gives its
   * content) or from the caller's part of the store; what it restores is weighed first (`weigher`).
   */
  async expand(
    caller: Caller,
    format: FormatAdapter,
    messages: readonly unknown[],
    given: readonly { id: string; content?: unknown }[] = [],
    reserve?: (bytes: number) => void,
  ): Promise<ExpandResult> {
    const inline = new Map<string, unknown>();
    const sizes = new Map<string, number>();
    const weigh = this.weigher(sizes, reserve);
    given.forEach((a, i) => {
      // A response's artifacts may mix inline originals with refs to stored ones (no content).
      if (!('content' in a) || a.content === undefined) return;
      const json = JSON.stringify(a.content);
      sizes.set(a.id, Buffer.byteLength(json));
      if (caller.address(json).id !== a.id) {
        throw fieldError(
          'CMP_ERR_ARTIFACT_MISMATCH',
          `artifacts[${i}].content`,
          `is not what ${a.id} names for this caller: it was changed, or another key or a service with another COMPACTOR_ARTIFACT_SECRET made it`,
        );
      }
      inline.set(a.id, a.content);
    });
    let loaded = 0;
    const lookup = async (ids: readonly string[]) => {
      const out = new Map<string, unknown>();
      const wanted = ids.filter((id) => !inline.has(id));
      for (const id of ids) if (inline.has(id)) out.set(id, inline.get(id));
      // Inline-only requests work without a store; anything else asks the store.
      if (wanted.length > 0 && (this.options.store || inline.size === 0)) {
        const found = await this.call((store) => store.get(caller.scope, wanted, this.options.now(), this.use()));
        for (const [id, a] of found) {
          const bytes = Buffer.byteLength(a.content);
          sizes.set(id, bytes);
          loaded += bytes;
        }
        weigh.loaded(loaded);
        for (const [id, a] of found) out.set(id, JSON.parse(a.content));
      }
      return out;
    };
    return expandHistory(format, caller.markers, messages, lookup, weigh.restore);
  }

  /**
   * The caller's live artifacts of `kinds` (the table in `history/artifact-kinds.ts`), most
   * recently used first, within `limit`: what the MCP `search` looks through and the conversation
   * record reads. Not a use (their TTL runs on); store failures are coded problems, as everywhere here.
   */
  async recent(caller: Caller, kinds: readonly ArtifactKind[], limit: RecentLimit): Promise<Artifact[]> {
    return this.call((store) => store.recent(caller.scope, kinds, this.options.now(), limit));
  }

  /** One original, read as a use; 404 `CMP_ERR_ARTIFACT_NOT_FOUND` when unknown, expired or evicted. */
  async get(caller: Caller, id: string): Promise<ArtifactView> {
    const found = ARTIFACT_ID.test(id)
      ? (await this.call((store) => store.get(caller.scope, [id], this.options.now(), this.use()))).get(id)
      : undefined;
    if (!found) throw fieldError('CMP_ERR_ARTIFACT_NOT_FOUND', 'id', `artifact ${JSON.stringify(id)} is unknown or has expired`);
    return {
      id: found.id,
      kind: found.kind,
      tool_name: found.tool_name,
      content: JSON.parse(found.content),
      sha256: found.sha256,
      created_at: new Date(found.created_at).toISOString(),
      expires_at: new Date(found.expires_at).toISOString(),
    };
  }
}
