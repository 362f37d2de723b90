import Database from 'better-sqlite3';
import { classifySqlite, openFailure, prepareFile } from './sqlite-faults.js';
import { migrate } from './sqlite-schema.js';
import {
  type Artifact,
  type ArtifactStore,
  checkFits,
  contentBytes,
  type NewArtifact,
  type StoreOptions,
  type StoreUsage,
} from './types.js';

/** SQLite caps bound parameters; 500 at a time stays well under it. */
const CHUNK = 500;
/** Rows read per step while evicting, oldest first. */
const EVICT_PAGE = 64;

interface Row {
  rowid: number;
  scope: string;
  id: string;
  bytes: number;
  created_at: number;
  expires_at: number;
}

/**
 * The embedded default: one SQLite file (created with its folder on first use) in WAL mode, so a
 * sidecar keeps its artifacts across restarts with nothing to set up. Rows are keyed by scope and
 * id. Expired rows are deleted at most once a minute, on write. With a cap (`maxBytes`), a put
 * that takes the content bytes over it evicts the oldest rows by creation time, in the same
 * transaction, walking the `created_at` index; the running total is kept in the file by triggers
 * (`sqlite-schema.ts`), so no put scans the table. Deleted rows' pages are reused by later writes:
 * the file stops growing near the cap rather than shrinking below its high-water mark.
 *
 * Opening throws `StoreFailedError` (folder cannot be made, path is a folder, not a database,
 * read-only, …) or `StoreUnavailableError` (busy); every method classifies its failures likewise.
 */
export class SqliteStore implements ArtifactStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly purge: Database.Statement;
  private readonly total: Database.Statement;
  private readonly oldest: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly maxBytes: number;
  private nextPurge = 0;
  private bytes = 0;
  private evicted = 0;

  /** @param path a file path, or `:memory:` */
  constructor(path: string, options: StoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 0;
    if (path !== ':memory:') prepareFile(path);
    let db: Database.Database | undefined;
    try {
      db = new Database(path);
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // A checkpointed WAL is cut back to this size: one 20 MB put would otherwise leave a 20 MB
      // -wal file behind for good.
      db.pragma(`journal_size_limit = ${16 * 1024 * 1024}`);
      migrate(db);
      this.db = db;
      this.insert =
        db.prepare(`INSERT INTO scoped_artifacts (scope, id, kind, tool_name, content, sha256, created_at, expires_at, bytes)
        VALUES (@scope, @id, @kind, @tool_name, @content, @sha256, @created_at, @expires_at, @bytes)
        ON CONFLICT(scope, id) DO UPDATE SET
          kind = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.kind ELSE scoped_artifacts.kind END,
          tool_name = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.tool_name ELSE scoped_artifacts.tool_name END,
          created_at = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.created_at ELSE scoped_artifacts.created_at END,
          expires_at = max(scoped_artifacts.expires_at, excluded.expires_at)`);
      this.purge = db.prepare('DELETE FROM scoped_artifacts WHERE expires_at <= ?');
      this.total = db.prepare('SELECT bytes FROM store_totals WHERE id = 0').pluck();
      // Keyset pagination over the creation-time index: rows spared (this put's own) are stepped over.
      this.oldest = db.prepare(`SELECT rowid, scope, id, bytes, created_at, expires_at FROM scoped_artifacts
        WHERE (created_at, rowid) > (?, ?) ORDER BY created_at, rowid LIMIT ${EVICT_PAGE}`);
      this.remove = db.prepare('DELETE FROM scoped_artifacts WHERE rowid = ?');
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

  private readTotal(): number {
    return Number(this.total.get() ?? 0);
  }

  async put(scope: string, artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void> {
    checkFits(artifacts, this.maxBytes);
    const expires = now + ttlSeconds * 1000;
    try {
      // An artifact with more than half its TTL left is not rewritten: the same history compacted
      // again would otherwise rewrite every original it offloads, growing the WAL on each call.
      const fresh = new Set<string>();
      for (let i = 0; i < artifacts.length; i += CHUNK) {
        const chunk = artifacts.slice(i, i + CHUNK).map((a) => a.id);
        const rows = this.db
          .prepare(
            `SELECT id FROM scoped_artifacts WHERE scope = ? AND expires_at > ? AND id IN (${chunk.map(() => '?').join(',')})`,
          )
          .all(scope, now + (ttlSeconds * 1000) / 2, ...chunk) as { id: string }[];
        for (const row of rows) fresh.add(row.id);
      }
      const writes = artifacts.filter((a) => !fresh.has(a.id));
      if (writes.length === 0 && now < this.nextPurge) return;
      const evicted = this.db.transaction(() => {
        for (const a of writes) this.insert.run({ ...a, scope, created_at: now, expires_at: expires, bytes: contentBytes(a) });
        if (now >= this.nextPurge) {
          this.purge.run(now);
          this.nextPurge = now + 60_000;
        }
        return this.evict(new Set(artifacts.map((a) => `${scope}\0${a.id}`)), now);
      })();
      // Counted once the transaction committed: a rolled-back eviction evicted nothing.
      this.evicted += evicted;
      this.bytes = this.readTotal();
    } catch (error) {
      throw classifySqlite('write', error);
    }
  }

  /**
   * Inside the put's transaction: deletes the oldest rows until the total is under the cap,
   * sparing the rows of this put (`checkFits` made sure they fit alone). Expired rows met on the
   * way go too, without counting as evictions. Returns how many live rows it evicted.
   */
  private evict(spare: ReadonlySet<string>, now: number): number {
    let evicted = 0;
    if (this.maxBytes <= 0) return evicted;
    let total = this.readTotal();
    let after: [number, number] = [-1, 0];
    while (total > this.maxBytes) {
      const rows = this.oldest.all(...after) as Row[];
      if (rows.length === 0) break;
      for (const row of rows) {
        after = [row.created_at, row.rowid];
        if (spare.has(`${row.scope}\0${row.id}`)) continue;
        this.remove.run(row.rowid);
        total -= row.bytes;
        if (row.expires_at > now) evicted++;
        if (total <= this.maxBytes) break;
      }
    }
    return evicted;
  }

  async get(scope: string, ids: readonly string[], now: number): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    if (ids.length === 0) return out;
    try {
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        const rows = this.db
          .prepare(
            `SELECT id, kind, tool_name, content, sha256, created_at, expires_at FROM scoped_artifacts
             WHERE scope = ? AND expires_at > ? AND id IN (${chunk.map(() => '?').join(',')})`,
          )
          .all(scope, now, ...chunk) as Artifact[];
        for (const row of rows) out.set(row.id, row);
      }
    } catch (error) {
      throw classifySqlite('read', error);
    }
    return out;
  }

  async secret(candidate: string): Promise<string> {
    try {
      this.db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('secret', ?)").run(candidate);
      return (this.db.prepare("SELECT value FROM meta WHERE key = 'secret'").get() as { value: string }).value;
    } catch (error) {
      throw classifySqlite('secret', error);
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
   * synchronously, and a probe must not stall the event loop for the 5 s a put would wait.
   */
  async probe(now: number): Promise<void> {
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
    if (this.db.open) this.db.close();
  }
}
