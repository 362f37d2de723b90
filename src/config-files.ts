import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { PriceFileSchema, type PriceRow } from './cost/prices.js';

/** The largest price file read at boot (`COMPACTOR_PRICES_FILE`), in bytes: 1 MiB, some thousands of rows. */
export const PRICES_FILE_MAX_BYTES = 1024 * 1024;

/** What a path names when it is not a regular file, as an operator would say it. */
function describe(stat: ReturnType<typeof fstatSync>): string {
  if (stat.isDirectory()) return 'a folder';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  return 'not a file';
}

/**
 * Reads a small configuration file as UTF-8, or says why not. Only a regular file of at most
 * `maxBytes` is read: the file is opened without blocking (a FIFO with no writer would otherwise
 * hang the boot), checked through its descriptor (so what is checked is what is read), and read
 * at most `maxBytes + 1` bytes (a file that grew since is refused, never read whole). A device
 * such as `/dev/zero` or a FIFO is refused at once. Returns the text, or `{problem}` naming what
 * is wrong without the file's content.
 */
export function readSmallFile(path: string, maxBytes: number): string | { problem: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { problem: `cannot read the file: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { problem: `not a regular file (${describe(stat)})` };
    if (stat.size > maxBytes) return { problem: `the file is larger than ${maxBytes} bytes (${stat.size})` };
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > maxBytes) return { problem: `the file is larger than ${maxBytes} bytes` };
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    return { problem: `cannot read the file: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
  } finally {
    closeSync(fd);
  }
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A price file's rows, or what is wrong with it (only a regular file of at most `PRICES_FILE_MAX_BYTES` is read). */
export function readPriceFile(path: string): PriceRow[] | string {
  const text = readSmallFile(path, PRICES_FILE_MAX_BYTES);
  if (typeof text !== 'string') return text.problem;
  const parsed = PriceFileSchema.safeParse(parseJson(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `expected JSON {as_of?, models: [{prefix, input, cached_input, cache_write?, output, currency?}]}: ${issue?.path.join('.')} ${issue?.message}`;
  }
  return parsed.data.models;
}
