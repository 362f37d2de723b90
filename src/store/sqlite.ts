import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { evictLeastUsed } from './sqlite-evict.js';
import { classifySqlite, openFailure, prepareFile } from './sqlite-faults.js';
import { DatabaseFile } from './sqlite-file.js';
import { migrate } from './sqlite-schema.js';
import { CHUNK, ListStatements, placeholders, prepareStatements, type Statements } from './sqlite-statements.js';
import { flushMarks, markUses, writeMarks } from './sqlite-use.js';
import {
  type Artifact,
  type ArtifactStore,
  type ArtifactUse,
  checkFits,
  contentBytes,
  type KeptArtifacts,
  type NewArtifact,
  type RecentLimit,
  type StoreOptions,
  type StoreUsage,
} from './types.js';
import { UseMarks } from './use-marks.js';

/**
 * The embedded default: one SQLite file (created with its folder on first use) in WAL mode, so a
 * sidecar keeps its artifacts across restarts with nothing to set up. Rows are keyed by scope and
 * id. Expired rows are deleted at most once a minute, on write. With a cap (`maxBytes`), a put
 * that takes the content bytes over it evicts the least recently used rows, in the same
 * transaction, walking the index of `artifact_use` (when each was last stored or read as a use;
 * `sqlite-schema.ts`); the running total is kept in the file by triggers, so no put scans the
 * table. Deleted rows' pages are reused by later writes: the file stops growing near the cap
 * rather than shrinking below its high-water mark.
 *
 * A file deleted or replaced under the running service (`DatabaseFile`) is noticed before each
 * write and each readiness probe: writes are refused with `StoreUnavailableError` rather than
 * lost into a file no restart will find; reads of what the open file holds go on.
 *
 * Opening throws `StoreFailedError` (folder cannot be made, path is a folder, not a database,
 * read-only, …) or `StoreUnavailableError` (busy); every method classifies its failures likewise.
 */
export class SqliteStore implements ArtifactStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly file: DatabaseFile;
  private readonly sql: Statements;
  private readonly maxBytes: number;
  private nextPurge = 0;
  /** The statements with an `IN` list, by their SQL (one per list length in use): compiled once, not on every put and read. */
  private readonly lists = new ListStatements(() => this.db);
  private bytes = 0;
  private evicted = 0;
  /** Marks of use of kept originals, not yet written (`UseMarks`). */
  private readonly marks = new UseMarks();

  /** @param path a file path, or `:memory:` */
  constructor(path: string, options: StoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 0;
    const inMemory = path === ':memory:';
    // A worker thread never creates the file: one missing now was deleted under the service.
    const missing = !inMemory && options.mustExist === true && !existsSync(path);
    if (!inMemory && !missing) prepareFile(path);
    let db: Database.Database | undefined;
    try {
      db = new Database(missing ? ':memory:' : path);
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // A checkpointed WAL is cut back to this size: one 20 MB put would otherwise leave a 20 MB
      // -wal file behind for good.
      db.pragma(`journal_size_limit = ${16 * 1024 * 1024}`);
      migrate(db);
      this.db = db;
      this.file = new DatabaseFile(inMemory ? undefined : path, missing);
      this.sql = prepareStatements(db);
      // A cap lowered since the last run holds from the start, not from the next put.
      if (this.maxBytes > 0 && this.readTotal() > this.maxBytes) {
        this.evicted += db.transaction(() => this.evict(new Set(), Date.now()))();
      }
      this.bytes = this.readTotal();
    } catch (error) {
      if (db?.open) db.close();
      throw openFailure(path, error);
    }
  }

  /** Inside a transaction: the least recently used rows evicted until under the cap (`evictLeastUsed`). */
  private evict(spare: ReadonlySet<string>, now: number): number {
    return this.maxBytes > 0 ? evictLeastUsed(this.sql, this.readTotal(), this.maxBytes, spare, now) : 0;
  }

  private readTotal(): number {
    return Number(this.sql.total.get() ?? 0);
  }

  /** Throws the `StoreUnavailableError` a write meets once the path no longer names the open file. */
  private writable(): void {
    const lost = this.file.lost();
    if (lost) throw lost;
  }

  async put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    checkFits(artifacts, this.maxBytes, kept?.bytes);
    this.writable();
    const expires = now + ttlSeconds * 1000;
    try {
      if (!this.marks.started) this.marks.start(this.sql.evictions.get() as string);
      if (kept && kept.ids.length > 0) {
        // One small read: nothing evicted since this connection last looked, so what its caller
        // stored a moment ago is still here; their marks of use wait in memory.
        if (!this.marks.vouch(this.sql.evictions.get() as string)) return kept.ids;
        this.marks.add(scope, kept.ids, now);
        if (artifacts.length === 0 && !this.marks.due(now)) return undefined;
      }
      // An artifact with more than half its TTL left is not rewritten: the same history compacted
      // again would otherwise rewrite every original it offloads, growing the WAL on each call.
      // Its last use is refreshed all the same (a small row of its own).
      const fresh = new Set<string>();
      for (let i = 0; i < artifacts.length; i += CHUNK) {
        const chunk = artifacts.slice(i, i + CHUNK).map((a) => a.id);
        const rows = this.lists
          .get(`SELECT id FROM scoped_artifacts WHERE scope = ? AND expires_at > ? AND id IN (${placeholders(chunk.length)})`)
          .all(scope, now + (ttlSeconds * 1000) / 2, ...chunk) as { id: string }[];
        for (const row of rows) fresh.add(row.id);
      }
      const evicted = this.db.transaction(() => {
        for (const a of artifacts) {
          if (!fresh.has(a.id)) {
            this.sql.insert.run({ ...a, scope, created_at: now, expires_at: expires, bytes: contentBytes(a) });
          }
          this.sql.touch.run(scope, a.id, now);
        }
        if (now >= this.nextPurge) {
          this.sql.purge.run(now);
          this.sql.purgeClaims.run(now);
          this.nextPurge = now + 60_000;
        }
        const over = this.maxBytes > 0 && this.readTotal() > this.maxBytes;
        // The marks held are written before this connection evicts: its order is its callers' order of use.
        if (over || this.marks.due(now)) writeMarks(this.sql, this.marks);
        if (!over) return 0;
        const spare = new Set(artifacts.map((a) => `${scope}\0${a.id}`));
        for (const id of kept?.ids ?? []) spare.add(`${scope}\0${id}`);
        return this.evict(spare, now);
      })();
      // Counted once the transaction committed: a rolled-back eviction evicted nothing.
      this.evicted += evicted;
      this.bytes = this.readTotal();
      return undefined;
    } catch (error) {
      throw classifySqlite('write', error);
    }
  }

  async get(scope: string, ids: readonly string[], now: number, use?: ArtifactUse): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    if (ids.length === 0) return out;
    try {
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        const rows = this.lists
          .get(
            `SELECT id, kind, tool_name, content, sha256, created_at, expires_at FROM scoped_artifacts
             WHERE scope = ? AND expires_at > ? AND id IN (${placeholders(chunk.length)})`,
          )
          .all(scope, now, ...chunk) as Artifact[];
        for (const row of rows) out.set(row.id, row);
      }
    } catch (error) {
      throw classifySqlite('read', error);
    }
    if (use && out.size > 0) this.refresh(scope, out, now, use);
    return out;
  }

  async recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]> {
    if (kinds.length === 0 || limit.count <= 0) return [];
    // The marks of use held by this connection first: its own reads and puts order what it lists.
    if (this.marks.size > 0 && !this.file.lost()) flushMarks(this.db, this.sql, this.marks);
    try {
      // The sizes first (the rows' first pages), then the contents of those that fit the budget.
      const rows = this.db
        .prepare(
          `SELECT a.id, a.bytes FROM artifact_use u JOIN scoped_artifacts a ON a.scope = u.scope AND a.id = u.id
           WHERE u.scope = ? AND a.expires_at > ? AND a.kind IN (${placeholders(kinds.length)})
           ORDER BY u.last_used DESC LIMIT ?`,
        )
        .all(scope, now, ...kinds, limit.count) as { id: string; bytes: number }[];
      const ids: string[] = [];
      let bytes = 0;
      for (const row of rows) {
        if (bytes + row.bytes > limit.bytes && ids.length > 0) break;
        bytes += row.bytes;
        ids.push(row.id);
      }
      const found = await this.get(scope, ids, now);
      return ids.map((id) => found.get(id)).filter((a): a is Artifact => a !== undefined);
    } catch (error) {
      throw classifySqlite('read', error);
    }
  }

  /** Marks what a read found as used now, best effort (`markUses`). */
  private refresh(scope: string, found: Map<string, Artifact>, now: number, use: ArtifactUse): void {
    if (!this.file.lost()) markUses(this.db, this.sql, this.marks, { scope, found, now, use });
  }

  async secret(candidate: string): Promise<string> {
    const kept = () => {
      try {
        return (this.db.prepare("SELECT value FROM meta WHERE key = 'secret'").get() as { value: string } | undefined)?.value;
      } catch (error) {
        throw classifySqlite('secret', error);
      }
    };
    const value = kept();
    if (value !== undefined) return value;
    this.writable();
    try {
      this.db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('secret', ?)").run(candidate);
    } catch (error) {
      throw classifySqlite('secret', error);
    }
    return kept() ?? candidate;
  }

  /** One statement: SQLite runs one writer at a time, so of the threads and processes on the file one claims it. */
  async claim(scope: string, id: string, ttlSeconds: number, now: number): Promise<boolean> {
    this.writable();
    try {
      return this.sql.claim.run(scope, id, now + ttlSeconds * 1000, now).changes === 1;
    } catch (error) {
      throw classifySqlite('claim', error);
    }
  }

  async ping(): Promise<boolean> {
    try {
      this.db.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * One small write (a row of `meta`), with a short busy timeout: better-sqlite3 waits on a lock
   * synchronously, and a probe must not stall the event loop for the 5 s a put would wait. A file
   * deleted or replaced under the service fails it, without writing.
   */
  async probe(now: number): Promise<void> {
    this.writable();
    try {
      this.db.pragma('busy_timeout = 100');
      try {
        this.db
          .prepare("INSERT INTO meta (key, value) VALUES ('probe', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
          .run(String(now));
      } finally {
        this.db.pragma('busy_timeout = 5000');
      }
    } catch (error) {
      throw classifySqlite('probe', error);
    }
  }

  evictions(): number {
    return this.evicted;
  }

  /**
   * Content bytes as the file counts them now (other connections, such as worker threads, write
   * too), and the evictions this connection made.
   */
  usage(): StoreUsage {
    try {
      this.bytes = this.readTotal();
    } catch {
      // The last total read: the gauge goes on while the file cannot be read.
    }
    return { bytes: this.bytes, maxBytes: this.maxBytes, evicted: this.evicted };
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    try {
      // Marks held in memory are written before the connection goes (best effort).
      if (this.marks.size > 0 && !this.file.lost()) this.db.transaction(() => writeMarks(this.sql, this.marks))();
    } catch {
      // Lost with the connection: the uses they record were a moment ago.
    }
    this.db.close();
  }
}
