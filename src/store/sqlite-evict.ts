import type { Statements } from './sqlite-statements.js';

/** A row of use and its artifact; `rowid` null when only the row of use is left (another writer's doing). */
interface Row {
  scope: string;
  id: string;
  last_used: number;
  rowid: number | null;
  bytes: number;
  expires_at: number;
}

/**
 * Inside a put's transaction: deletes the least recently used rows until the content bytes
 * (`total`, read before) are under `maxBytes`, sparing the rows of this put (`spare`: scope and id;
 * `checkFits` made sure they fit alone). Expired rows met on the way go too, without counting as
 * evictions. Counts what it removed in the file (`Statements.countEvictions`). Returns how many
 * live rows it evicted.
 */
export function evictLeastUsed(
  sql: Statements,
  total: number,
  maxBytes: number,
  spare: ReadonlySet<string>,
  now: number,
): number {
  let evicted = 0;
  let removed = 0;
  let after: [number, string, string] = [Number.MIN_SAFE_INTEGER, '', ''];
  while (total > maxBytes) {
    const rows = sql.leastUsed.all(...after) as Row[];
    if (rows.length === 0) break;
    for (const row of rows) {
      after = [row.last_used, row.scope, row.id];
      if (spare.has(`${row.scope}\0${row.id}`)) continue;
      if (row.rowid === null) {
        sql.forget.run(row.scope, row.id);
        continue;
      }
      sql.remove.run(row.rowid);
      removed++;
      total -= row.bytes;
      if (row.expires_at > now) evicted++;
      if (total <= maxBytes) break;
    }
  }
  // Every connection on the file learns that rows went (a kept original may be among them).
  if (removed > 0) sql.countEvictions.run(String(removed));
  return evicted;
}
