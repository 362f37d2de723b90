import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Artifact, ArtifactStore, NewArtifact } from './types.js';
import { StoreUnavailableError } from './types.js';

/**
 * The embedded default: one SQLite file (created with its folder on first use) in WAL mode, so a
 * sidecar keeps its artifacts across restarts with nothing to set up. Rows are keyed by scope and
 * id. Expired rows are deleted at most once a minute, on write. The table of versions before
 * 0.2 (`artifacts`, ids derived from content alone, no scope) is dropped on open: its ids could be
 * guessed, and any caller could read any row.
 */
export class SqliteStore implements ArtifactStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly purge: Database.Statement;
  private nextPurge = 0;

  /** @param path a file path, or `:memory:` */
  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`DROP TABLE IF EXISTS artifacts;
    CREATE TABLE IF NOT EXISTS scoped_artifacts (
      scope TEXT NOT NULL,
      id TEXT NOT NULL,
      kind TEXT NOT NULL,
      tool_name TEXT,
      content TEXT NOT NULL,
      sha256 TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      PRIMARY KEY (scope, id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`);
    this.insert =
      this.db.prepare(`INSERT INTO scoped_artifacts (scope, id, kind, tool_name, content, sha256, created_at, expires_at)
      VALUES (@scope, @id, @kind, @tool_name, @content, @sha256, @created_at, @expires_at)
      ON CONFLICT(scope, id) DO UPDATE SET
        kind = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.kind ELSE scoped_artifacts.kind END,
        tool_name = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.tool_name ELSE scoped_artifacts.tool_name END,
        created_at = CASE WHEN scoped_artifacts.expires_at <= @created_at THEN excluded.created_at ELSE scoped_artifacts.created_at END,
        expires_at = max(scoped_artifacts.expires_at, excluded.expires_at)`);
    this.purge = this.db.prepare('DELETE FROM scoped_artifacts WHERE expires_at <= ?');
  }

  async put(scope: string, artifacts: readonly NewArtifact[], ttlSeconds: number, now: number): Promise<void> {
    const expires = now + ttlSeconds * 1000;
    try {
      // An artifact with more than half its TTL left is not rewritten: the same history compacted
      // again would otherwise rewrite every original it offloads, growing the WAL on each call.
      const fresh = new Set<string>();
      for (let i = 0; i < artifacts.length; i += 500) {
        const chunk = artifacts.slice(i, i + 500).map((a) => a.id);
        const rows = this.db
          .prepare(
            `SELECT id FROM scoped_artifacts WHERE scope = ? AND expires_at > ? AND id IN (${chunk.map(() => '?').join(',')})`,
          )
          .all(scope, now + (ttlSeconds * 1000) / 2, ...chunk) as { id: string }[];
        for (const row of rows) fresh.add(row.id);
      }
      const writes = artifacts.filter((a) => !fresh.has(a.id));
      if (writes.length === 0 && now < this.nextPurge) return;
      this.db.transaction(() => {
        for (const a of writes) this.insert.run({ ...a, scope, created_at: now, expires_at: expires });
        if (now >= this.nextPurge) {
          this.purge.run(now);
          this.nextPurge = now + 60_000;
        }
      })();
    } catch (error) {
      throw new StoreUnavailableError(`sqlite write failed: ${(error as Error).message}`);
    }
  }

  async get(scope: string, ids: readonly string[], now: number): Promise<Map<string, Artifact>> {
    const out = new Map<string, Artifact>();
    if (ids.length === 0) return out;
    try {
      // SQLite caps bound parameters; 500 at a time stays well under it.
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const rows = this.db
          .prepare(
            `SELECT id, kind, tool_name, content, sha256, created_at, expires_at FROM scoped_artifacts
             WHERE scope = ? AND expires_at > ? AND id IN (${chunk.map(() => '?').join(',')})`,
          )
          .all(scope, now, ...chunk) as Artifact[];
        for (const row of rows) out.set(row.id, row);
      }
    } catch (error) {
      throw new StoreUnavailableError(`sqlite read failed: ${(error as Error).message}`);
    }
    return out;
  }

  async secret(candidate: string): Promise<string> {
    try {
      this.db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('secret', ?)").run(candidate);
      return (this.db.prepare("SELECT value FROM meta WHERE key = 'secret'").get() as { value: string }).value;
    } catch (error) {
      throw new StoreUnavailableError(`sqlite secret failed: ${(error as Error).message}`);
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

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
