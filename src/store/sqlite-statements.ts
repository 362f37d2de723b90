import type Database from 'better-sqlite3';

/** Rows read per step while evicting, least recently used first. */
export const EVICT_PAGE = 64;

/** The statements a `SqliteStore` runs on every put and eviction, prepared once per connection. */
export interface Statements {
  /** Stores an artifact; one stored already keeps its content and creation time, its expiry extended. */
  insert: Database.Statement;
  /** (scope, id, now): marks an artifact used now. */
  touch: Database.Statement;
  /** (expires, scope, id): extends an artifact's expiry to at least `expires`. */
  extend: Database.Statement;
  /** (now): deletes every expired artifact. */
  purge: Database.Statement;
  /** The running total of content bytes. */
  total: Database.Statement;
  /** (last_used, scope, id): the next page of rows of use after that key, least recently used first, with their artifacts. */
  leastUsed: Database.Statement;
  /** (rowid): deletes an artifact (the triggers drop its row of use and its bytes from the total). */
  remove: Database.Statement;
  /** (scope, id): deletes a row of use whose artifact is gone. */
  forget: Database.Statement;
  /** (scope, id, expires, now): claims a key unless a live claim holds it; one row changed when this call claimed it. */
  claim: Database.Statement;
  /** (now): deletes every expired claim. */
  purgeClaims: Database.Statement;
  /** (last_used, scope, id): a mark of use held in memory, written; no row for an artifact gone. */
  mark: Database.Statement;
  /** (n): adds n to the count of rows eviction removed, by any connection (what `UseMarks.vouch` compares). */
  countEvictions: Database.Statement;
  /** That count, as text ('0' before the first). */
  evictions: Database.Statement;
}

/** Prepares the statements on a database `migrate` brought to the current layout. */
export function prepareStatements(db: Database.Database): Statements {
  return {
    insert: db.prepare(`INSERT INTO scoped_artifacts (scope, id, kind, tool_name, content, sha256, created_at, expires_at, bytes)
      VALUES (@scope, @id, @kind, @tool_name, @content, @sha256, @created_at, @expires_at, @bytes)
      ON CONFLICT(scope, id) DO UPDATE SET
        kind = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.kind ELSE scoped_artifacts.kind END,
        tool_name = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.tool_name ELSE scoped_artifacts.tool_name END,
        created_at = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.created_at ELSE scoped_artifacts.created_at END,
        expires_at = max(scoped_artifacts.expires_at, excluded.expires_at)`),
    touch: db.prepare(`INSERT INTO artifact_use (scope, id, last_used) VALUES (?, ?, ?)
      ON CONFLICT(scope, id) DO UPDATE SET last_used = max(last_used, excluded.last_used)`),
    extend: db.prepare('UPDATE scoped_artifacts SET expires_at = max(expires_at, ?) WHERE scope = ? AND id = ?'),
    purge: db.prepare('DELETE FROM scoped_artifacts WHERE expires_at <= ?'),
    total: db.prepare('SELECT bytes FROM store_totals WHERE id = 0').pluck(),
    // Keyset pagination over the index of last uses: rows spared (a put's own) are stepped over.
    leastUsed: db.prepare(`SELECT u.scope, u.id, u.last_used, a.rowid AS rowid, a.bytes, a.expires_at
      FROM artifact_use u LEFT JOIN scoped_artifacts a ON a.scope = u.scope AND a.id = u.id
      WHERE (u.last_used, u.scope, u.id) > (?, ?, ?) ORDER BY u.last_used, u.scope, u.id LIMIT ${EVICT_PAGE}`),
    remove: db.prepare('DELETE FROM scoped_artifacts WHERE rowid = ?'),
    forget: db.prepare('DELETE FROM artifact_use WHERE scope = ? AND id = ?'),
    claim: db.prepare(`INSERT INTO claims (scope, id, expires_at) VALUES (?, ?, ?)
      ON CONFLICT(scope, id) DO UPDATE SET expires_at = excluded.expires_at WHERE claims.expires_at <= ?`),
    purgeClaims: db.prepare('DELETE FROM claims WHERE expires_at <= ?'),
    mark: db.prepare('UPDATE artifact_use SET last_used = max(last_used, ?) WHERE scope = ? AND id = ?'),
    countEvictions: db.prepare(`INSERT INTO meta (key, value) VALUES ('evictions', ?)
      ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)`),
    evictions: db.prepare("SELECT coalesce((SELECT value FROM meta WHERE key = 'evictions'), '0')").pluck(),
  };
}

/** SQLite caps bound parameters; 500 at a time stays well under it. */
export const CHUNK = 500;

/** `?,?,…`: the placeholders of an `IN` list of `n`. */
export const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(',');

/** Statements whose SQL depends on a list's length, compiled on first use and kept (64 at most). */
export class ListStatements {
  private readonly listed = new Map<string, Database.Statement>();

  constructor(private readonly db: () => Database.Database) {}

  get(sql: string): Database.Statement {
    let statement = this.listed.get(sql);
    if (!statement) {
      // Bounded: a burst of many list lengths starts the set afresh rather than holding them all.
      if (this.listed.size >= 64) this.listed.clear();
      statement = this.db().prepare(sql);
      this.listed.set(sql, statement);
    }
    return statement;
  }
}
