import type Database from 'better-sqlite3';
import type { Statements } from './sqlite-statements.js';
import type { Artifact, ArtifactUse } from './types.js';
import type { UseMarks } from './use-marks.js';

/**
 * Marks what a read found as used now, and extends the expiry of those with less than half a
 * TTL left (rewriting a row is dearer than touching its row of use). Best effort, with a short
 * busy timeout: a read that cannot write right now (busy, read-only) still answers.
 */
export function refreshUses(
  db: Database.Database,
  sql: Statements,
  scope: string,
  found: Map<string, Artifact>,
  now: number,
  use: ArtifactUse,
): void {
  const ttl = use.ttlSeconds * 1000;
  const extended = briefly(db, () => {
    const out: Artifact[] = [];
    for (const a of found.values()) {
      sql.touch.run(scope, a.id, now);
      if (a.expires_at >= now + ttl / 2) continue;
      sql.extend.run(now + ttl, scope, a.id);
      out.push({ ...a, expires_at: Math.max(a.expires_at, now + ttl) });
    }
    return out;
  });
  // Not written (busy, read-only): the read stands; its recency waits for the next use.
  for (const a of extended ?? []) found.set(a.id, a);
}

/**
 * `work` in one transaction under a short busy timeout (a read must not wait on another writer),
 * best effort: undefined when it could not be written.
 */
function briefly<T>(db: Database.Database, work: () => T): T | undefined {
  try {
    db.pragma('busy_timeout = 100');
    try {
      return db.transaction(work)();
    } finally {
      db.pragma('busy_timeout = 5000');
    }
  } catch {
    return undefined;
  }
}

/** Inside a transaction: the marks of use held in memory written to the rows of use (none for an artifact gone). */
export function writeMarks(sql: Statements, marks: UseMarks): void {
  for (const [scope, id, when] of marks.drain()) sql.mark.run(when, scope, id);
}

/**
 * Marks what a read found as used now, best effort. Only an expiry to extend is written at once
 * (`refreshUses`); otherwise the marks wait in memory with the puts' (`UseMarks`), written before
 * the connection next evicts or within `MARK_FLUSH_MS`: a summary read on every call of a
 * conversation had been a write transaction on every call.
 */
export function markUses(
  db: Database.Database,
  sql: Statements,
  marks: UseMarks,
  read: { scope: string; found: Map<string, Artifact>; now: number; use: ArtifactUse },
): void {
  const { scope, found, now, use } = read;
  const half = (use.ttlSeconds * 1000) / 2;
  for (const a of found.values()) {
    if (a.expires_at >= now + half) continue;
    refreshUses(db, sql, scope, found, now, use);
    return;
  }
  marks.add(scope, [...found.keys()], now);
  if (marks.due(now)) flushMarks(db, sql, marks);
}

/** The marks held written now, best effort (`briefly`): lost with a write that fails, as a read's use is. */
export function flushMarks(db: Database.Database, sql: Statements, marks: UseMarks): void {
  briefly(db, () => writeMarks(sql, marks));
}
