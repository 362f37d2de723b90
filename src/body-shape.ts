import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './tokens/json-bytes.js';

/** Bytes of a top-level key kept to name it (longer keys are not the service's). */
const KEY_BYTES = 64;

/** Whether the bytes of `chunk` just before `end` (from `from` on) are an odd run of backslashes: the byte at `end` is escaped. */
function oddBackslashesBefore(chunk: Buffer, end: number, from: number): boolean {
  let k = end;
  while (k > from && chunk[k - 1] === BACKSLASH) k--;
  return (end - k) % 2 === 1;
}

/**
 * The shape of a JSON body counted as its bytes arrive, before it is parsed: how many objects and
 * arrays it holds (what parsing it costs beyond its bytes), how many items the largest array
 * under a top-level key holds (`messages`: the history) and that key, and how many items the
 * arrays inside those items hold (`blocks`: content parts and tool calls, which are modelled one
 * by one like messages). One pass over the bytes, linear, on the main thread while they arrive (a
 * string's contents skipped natively: about 0.2 ms for the load benchmark's 196 KB): nothing but a few counters and one short key is kept. It does not validate: an
 * invalid body is counted as far as it goes and refused by the parser afterwards.
 */
export class BodyShape {
  /** Objects and arrays opened so far. */
  containers = 0;
  /** Items of the largest array under a top-level key. */
  messages = 0;
  /** The top-level key of that array, as written (JSON escapes kept), up to 64 bytes. */
  messagesKey = '';
  /**
   * Items of the arrays that are values of an object item of a top-level array: a message's
   * content parts (`content`, `parts`) and tool calls (`tool_calls`), in every top-level array.
   */
  blocks = 0;

  private inString = false;
  /** A backslash ended the last chunk inside a string: the next byte is escaped. */
  private escaped = false;
  private depth = 0;
  /** Whether the root is an object, and the container opened at depth 2 is an array. */
  private rootObject = false;
  private inTopArray = false;
  /** The item open at depth 3 is an object, and the container open at depth 4 is an array in it. */
  private inMessage = false;
  private inBlockArray = false;
  /** Items of the array under the current top-level key, and that key. */
  private items = 0;
  private key = '';
  /** The last string at depth 1 (a key once a colon follows), up to `KEY_BYTES`. */
  private lastString: Buffer[] = [];
  private lastLength = 0;

  /**
   * Counts one chunk of the body: a plain loop over the bytes outside strings, its state in
   * locals; inside a string the next quote is found natively (`indexOf`, most of a history's bytes
   * are string contents) and is its end unless an odd run of backslashes precedes it.
   */
  feed(chunk: Buffer): void {
    let inString = this.inString;
    let keyFrom = inString && this.depth === 1 ? 0 : -1;
    const n = chunk.length;
    if (n === 0) return;
    let i = 0;
    // A backslash ended the last chunk: this chunk's first byte is escaped.
    if (inString && this.escaped && n > 0) i = 1;
    let escaped = false;
    while (i < n) {
      if (inString) {
        const quote = chunk.indexOf(QUOTE, i);
        if (quote < 0) {
          escaped = oddBackslashesBefore(chunk, n, i);
          i = n;
          break;
        }
        if (oddBackslashesBefore(chunk, quote, i)) {
          i = quote + 1;
          continue;
        }
        inString = false;
        if (keyFrom >= 0) this.keep(chunk, keyFrom, quote);
        keyFrom = -1;
        i = quote + 1;
        continue;
      }
      const byte = chunk[i] as number;
      if (byte === QUOTE) {
        inString = true;
        if (this.depth === 1) {
          this.lastString = [];
          this.lastLength = 0;
          keyFrom = i + 1;
        }
      } else if (byte < OPEN_ARRAY) {
        if (byte === COLON && this.depth === 1) this.key = Buffer.concat(this.lastString).toString('utf8');
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) this.open(byte);
      else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) this.close();
      i++;
    }
    if (keyFrom >= 0) this.keep(chunk, keyFrom, n);
    this.inString = inString;
    this.escaped = escaped;
  }

  private open(byte: number): void {
    this.containers++;
    this.depth++;
    if (this.depth === 1) this.rootObject = byte === OPEN_OBJECT;
    else if (this.depth === 2 && this.rootObject) {
      this.inTopArray = byte === OPEN_ARRAY;
      this.items = 0;
    } else if (this.depth === 3 && this.inTopArray) {
      this.inMessage = byte === OPEN_OBJECT;
      this.item();
    } else if (this.depth === 4) this.inBlockArray = this.inMessage && byte === OPEN_ARRAY;
    else if (this.depth === 5 && this.inBlockArray) this.blocks++;
  }

  private close(): void {
    if (this.depth === 2) this.inTopArray = false;
    else if (this.depth === 3) this.inMessage = false;
    else if (this.depth === 4) this.inBlockArray = false;
    this.depth = Math.max(0, this.depth - 1);
  }

  /** One more item of a top-level array (an object or array; scalars are not messages of any format). */
  private item(): void {
    this.items++;
    if (this.items > this.messages) {
      this.messages = this.items;
      this.messagesKey = this.key;
    }
  }

  /** Keeps the start of a string at depth 1 (a candidate key). */
  private keep(chunk: Buffer, from: number, to: number): void {
    if (this.depth !== 1 || this.lastLength >= KEY_BYTES || to <= from) return;
    const part = chunk.subarray(from, Math.min(to, from + KEY_BYTES - this.lastLength));
    this.lastString.push(Buffer.from(part));
    this.lastLength += part.length;
  }
}
