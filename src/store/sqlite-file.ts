import { statSync } from 'node:fs';
import { StoreUnavailableError } from './types.js';

/** What a path names now: its device and inode, or undefined when it names nothing. */
function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
    return stat ? `${stat.dev}:${stat.ino}` : undefined;
  } catch {
    // A folder on the way that cannot be searched any more: the path names nothing we can use.
    return undefined;
  }
}

/**
 * Watches that a database path still names the file the store opened. SQLite keeps writing to an
 * open file that was deleted (or renamed over) under it: every write would succeed into a file no
 * restart will find, the installation secret with it. better-sqlite3 exposes no descriptor to
 * `fstat`, so the path's device and inode, taken right after opening, are compared with the
 * path's current ones (one `stat`, a few microseconds) before each write and each readiness probe.
 */
export class DatabaseFile {
  private readonly opened: string | undefined;

  /**
   * @param path the file just opened; undefined for `:memory:` (nothing to watch)
   * @param missing the file had to exist already and did not: lost from the start
   */
  constructor(
    private readonly path: string | undefined,
    private readonly missing = false,
  ) {
    this.opened = path === undefined || missing ? undefined : identityOf(path);
  }

  /** Why writes must be refused (the path no longer names the open file), or undefined while it does. */
  lost(): StoreUnavailableError | undefined {
    if (this.path === undefined) return undefined;
    if (!this.missing && this.opened !== undefined && identityOf(this.path) === this.opened) return undefined;
    return new StoreUnavailableError(
      `sqlite write refused: ${this.path} ${this.missing ? 'did not exist when this thread opened it' : 'no longer names the file opened'}`,
      'lost its database file (deleted or replaced while the service ran); writes are refused, since they would be lost, until the service is restarted',
      30,
    );
  }
}
