import type Database from 'better-sqlite3';

/** The layout `migrate` leaves, recorded in `PRAGMA user_version`. */
export const SCHEMA_VERSION = 3;

/**
 * `content` comes last: SQLite stores a row's columns in order and spills what does not fit in
 * the page into a chain of overflow pages, so reading a column stored after a 20 MB content
 * walks 5,000 pages. With the small columns first, expiry checks, eviction and purging read
 * only the row's first page. A rowid table (not WITHOUT ROWID, which SQLite advises only for
 * small rows): inserting and deleting multi-megabyte rows measured twice and four times faster.
 */
const table = (name: string) => `CREATE TABLE ${name} (
  scope TEXT NOT NULL,
  id TEXT NOT NULL,
  kind TEXT NOT NULL,
  tool_name TEXT,
  sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  content TEXT NOT NULL,
  UNIQUE (scope, id)
)`;

const COLUMNS = 'scope, id, kind, tool_name, sha256, created_at, expires_at, bytes, content';

/**
 * The running total of content bytes lives in the database, kept by triggers in the same
 * transaction as every insert and delete (purge, eviction, another process on the same file), so
 * the cap never scans the table and the total survives restarts.
 */
const TOTALS = `CREATE TABLE IF NOT EXISTS store_totals (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO store_totals (id, bytes) VALUES (0, (SELECT coalesce(sum(bytes), 0) FROM scoped_artifacts));
CREATE TRIGGER IF NOT EXISTS scoped_artifacts_added AFTER INSERT ON scoped_artifacts
  BEGIN UPDATE store_totals SET bytes = bytes + NEW.bytes WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS scoped_artifacts_removed AFTER DELETE ON scoped_artifacts
  BEGIN UPDATE store_totals SET bytes = bytes - OLD.bytes WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS scoped_artifacts_resized AFTER UPDATE OF bytes ON scoped_artifacts
  BEGIN UPDATE store_totals SET bytes = bytes + NEW.bytes - OLD.bytes WHERE id = 0; END`;

/**
 * When each artifact was last used (stored, stored again, or read as a use), in a table of its
 * own: refreshing it writes one small row, where updating a column of `scoped_artifacts` would
 * rebuild the whole record (SQLite reads every overflow page of a 20 MB `content` to do so).
 * Eviction walks it by `last_used`. Triggers keep it in step with every insert and delete, by
 * whichever writer (a worker thread, an older version of the service on the same file); rows that
 * predate it are last used when they were created, as far as the file knows.
 */
const USE = `CREATE TABLE IF NOT EXISTS artifact_use (
    scope TEXT NOT NULL, id TEXT NOT NULL, last_used INTEGER NOT NULL, PRIMARY KEY (scope, id)) WITHOUT ROWID;
  INSERT OR IGNORE INTO artifact_use (scope, id, last_used) SELECT scope, id, created_at FROM scoped_artifacts;
  CREATE INDEX IF NOT EXISTS artifact_use_by_recency ON artifact_use (last_used);
  CREATE TRIGGER IF NOT EXISTS scoped_artifacts_used AFTER INSERT ON scoped_artifacts
    BEGIN INSERT OR REPLACE INTO artifact_use (scope, id, last_used) VALUES (NEW.scope, NEW.id, NEW.created_at); END;
  CREATE TRIGGER IF NOT EXISTS scoped_artifacts_forgotten AFTER DELETE ON scoped_artifacts
    BEGIN DELETE FROM artifact_use WHERE scope = OLD.scope AND id = OLD.id; END`;

/**
 * Version 3: `claim`'s claims (a prepared summary billed once), one small row each, expiring.
 * A file of version 2 gains the table; an older service ignores it.
 */
const CLAIMS = `CREATE TABLE IF NOT EXISTS claims (
    scope TEXT NOT NULL, id TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (scope, id)) WITHOUT ROWID`;

/**
 * Version 0 to 1, the layouts before it: the table of versions before 0.2 (`artifacts`, ids
 * derived from content alone, no scope) is dropped (its ids could be guessed, and any caller could
 * read any row); a `scoped_artifacts` table of the first scoped layout (content before the small
 * columns, no `bytes`) is copied into the current one. Then the indexes purging (by expiry) and
 * the eviction of version 1 (by creation time) use, and the running total.
 */
function toVersion1(db: Database.Database): void {
  db.exec('DROP TABLE IF EXISTS artifacts');
  const old = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scoped_artifacts'").get();
  if (old) {
    db.exec(`${table('scoped_artifacts_v1')};
      INSERT INTO scoped_artifacts_v1 (${COLUMNS})
        SELECT scope, id, kind, tool_name, sha256, created_at, expires_at, length(CAST(content AS BLOB)), content FROM scoped_artifacts;
      DROP TABLE scoped_artifacts;
      ALTER TABLE scoped_artifacts_v1 RENAME TO scoped_artifacts`);
  } else {
    db.exec(table('scoped_artifacts'));
  }
  db.exec(`CREATE INDEX IF NOT EXISTS scoped_artifacts_by_age ON scoped_artifacts (created_at);
    CREATE INDEX IF NOT EXISTS scoped_artifacts_by_expiry ON scoped_artifacts (expires_at);
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    ${TOTALS}`);
}

/**
 * Brings a database file to `SCHEMA_VERSION`, in one immediate transaction (two processes
 * opening one file at once do it once): the layouts before version 1 (`toVersion1`), then
 * version 2's table of last uses (`USE`), version 3's claims (`CLAIMS`). A file of version 1 or 2
 * opens as it is, its rows untouched. An older service opening a newer file still works: the
 * triggers keep the table of uses right.
 */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version >= SCHEMA_VERSION) return;
    if (version < 1) toVersion1(db);
    db.exec(`${USE};
      ${CLAIMS};
      PRAGMA user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}
