import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { StoreFailedError, StoreUnavailableError } from './types.js';

/** The SQLite result code better-sqlite3 attaches (`SQLITE_BUSY`, `SQLITE_READONLY_DIRECTORY`, …), else ''. */
function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

const is = (code: string, ...prefixes: string[]) => prefixes.some((p) => code === p || code.startsWith(`${p}_`));

/**
 * Sorts a SQLite failure into transient (`StoreUnavailableError`: busy, locked, disk full, I/O
 * error, closed; a retry may succeed) and permanent (`StoreFailedError`: read-only, corrupt,
 * cannot open, access denied, anything unknown; an operator must act). The problem named never
 * holds content or paths: it reaches clients.
 */
export function classifySqlite(what: string, error: unknown): StoreUnavailableError | StoreFailedError {
  const code = sqliteCode(error);
  const message = `sqlite ${what} failed: ${code || (error as Error)?.name || 'error'}: ${(error as Error)?.message ?? String(error)}`;
  if (is(code, 'SQLITE_BUSY', 'SQLITE_LOCKED')) {
    return new StoreUnavailableError(message, 'is busy (another writer holds the database)', 1);
  }
  // A full disk may be freed (and the cap's evictions free space too): worth a retry, later.
  if (is(code, 'SQLITE_FULL')) return new StoreUnavailableError(message, 'is full (no space left on its disk)', 30);
  if (is(code, 'SQLITE_IOERR', 'SQLITE_NOMEM')) return new StoreUnavailableError(message, 'met an I/O error', 5);
  if (error instanceof TypeError && /not open/i.test(error.message)) {
    return new StoreUnavailableError(message, 'is closed (the service is shutting down)', 2);
  }
  if (is(code, 'SQLITE_READONLY')) return new StoreFailedError(message, 'is read-only (its file or folder cannot be written)');
  if (is(code, 'SQLITE_CORRUPT', 'SQLITE_NOTADB')) {
    return new StoreFailedError(message, 'is corrupt (its file is not a readable SQLite database)');
  }
  if (is(code, 'SQLITE_CANTOPEN')) return new StoreFailedError(message, 'cannot open its database file');
  if (is(code, 'SQLITE_PERM', 'SQLITE_AUTH')) return new StoreFailedError(message, 'refuses access (permission denied)');
  return new StoreFailedError(message, `failed (${code || 'unexpected error'})`);
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a database file could not be opened, in an operator's terms, naming the file or folder at
 * fault (this is said at boot only, to whoever set `COMPACTOR_STORE_URL`).
 */
export function openFailure(path: string, error: unknown): StoreUnavailableError | StoreFailedError {
  const fault = classifySqlite('open', error);
  if (fault instanceof StoreUnavailableError) return fault;
  const code = sqliteCode(error);
  const folder = dirname(resolve(path));
  if (is(code, 'SQLITE_READONLY', 'SQLITE_CANTOPEN', 'SQLITE_PERM')) {
    if (!writable(folder)) return new StoreFailedError(fault.message, `is read-only (the folder ${folder} is not writable)`);
    if (exists(path) && !writable(path))
      return new StoreFailedError(fault.message, `is read-only (the file ${path} is not writable)`);
  }
  return fault;
}

/**
 * Makes sure the database file's folder exists, creating what is missing one level at a time.
 * Not `mkdirSync(…, {recursive: true})`: under `/proc` (and through a dangling symlink) a parent
 * exists but its child can never be made, and Node 20's recursive mkdir retries that forever.
 * Also refuses a path that is a folder. Throws `StoreFailedError` naming the path at fault.
 */
export function prepareFile(path: string): void {
  const file = resolve(path);
  let stat: ReturnType<typeof statSync> | undefined;
  try {
    stat = statSync(file);
  } catch {
    // Not there yet: SQLite creates it.
  }
  if (stat?.isDirectory())
    throw new StoreFailedError(
      `sqlite open failed: ${file} is a folder`,
      `cannot use ${file}: it is a folder, not a database file`,
    );
  const missing: string[] = [];
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    try {
      if (!statSync(dir).isDirectory()) {
        throw new StoreFailedError(`sqlite open failed: ${dir} is not a folder`, `cannot create its folder: ${dir} is a file`);
      }
      break;
    } catch (error) {
      if (error instanceof StoreFailedError) throw error;
      missing.unshift(dir);
      if (dirname(dir) === dir) break;
    }
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      if (code === 'EEXIST' && statSync(dir, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw new StoreFailedError(`sqlite open failed: mkdir ${dir}: ${code}`, `cannot create its folder ${dir} (${code})`);
    }
  }
}
