/**
 * Reads the usage a provider reports out of a copy of its answer, as the answer streams past:
 * Anthropic `message_start` and `message_delta` events, Responses `response.completed`, a Chat
 * Completions chunk's (or answer's) `usage`, Gemini's `usageMetadata`. Never more than `TAIL`
 * bytes of one event (or of a JSON answer) are held: the usage object sits at the end of each
 * (after the output), so an answer of any size is read in bounded memory and linear time, and a
 * parse never holds the client's bytes (the tap sees a copy, after they were written).
 *
 * It works on bytes: a chunk is searched (natively) for `"usage` and for its last event boundary,
 * and only the events that name usage are decoded and parsed. Text deltas, nearly all of a long
 * answer, are never decoded, split into lines or joined.
 */

/** Bytes of an event or answer kept to find its usage in: its end. */
export const TAIL = 256 * 1024;

const KEYS = ['"usage":', '"usageMetadata":'];
/** What every key begins with, searched for in the bytes. */
const MENTION = Buffer.from('"usage');
/** SSE event boundaries (a blank line after LF, CRLF or CR line ends), as bytes. */
const LF_BOUNDARY = Buffer.from('\n\n');
const BOUNDARIES = [LF_BOUNDARY, Buffer.from('\r\n\r\n'), Buffer.from('\r\r')];
const CR = 13;
/** The longest boundary (`\r\n\r\n`), in bytes. */
const BOUNDARY_MAX = 4;
const EVENT_SPLIT = /\r\n\r\n|\n\n|\r\r/;
const LINE_SPLIT = /\r\n|\n|\r/;
/** SSE lines that carry no data: `event:`, `id:`, `retry:` fields and `:` comments. */
const NOT_DATA = /^(?:event|id|retry)?:/;

/**
 * The last JSON object that follows one of `KEYS` in `text`, parsed; undefined when there is
 * none or it does not parse (a cut answer). Scans strings as JSON does, so braces inside them
 * do not count.
 */
export function lastUsageObject(text: string): Record<string, unknown> | undefined {
  let at = -1;
  let key = '';
  for (const k of KEYS) {
    const i = text.lastIndexOf(k);
    if (i > at) {
      at = i;
      key = k;
    }
  }
  if (at < 0) return undefined;
  let start = at + key.length;
  while (start < text.length && /\s/.test(text[start] as string)) start++;
  if (text[start] !== '{') return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) {
        try {
          const value = JSON.parse(text.slice(start, i + 1)) as unknown;
          return typeof value === 'object' && value !== null && !Array.isArray(value)
            ? (value as Record<string, unknown>)
            : undefined;
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}

/** Merges reported figures: later ones override, nested objects merge (Anthropic's delta completes its start). */
function merge(into: Record<string, unknown>, from: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(from)) {
    if (v === null || v === undefined) continue;
    const old = into[k];
    into[k] =
      typeof v === 'object' && !Array.isArray(v) && typeof old === 'object' && old !== null && !Array.isArray(old)
        ? merge({ ...(old as Record<string, unknown>) }, v as Record<string, unknown>)
        : v;
  }
  return into;
}

/** Where the last SSE event boundary in `bytes` ends, or -1 when there is none. */
function lastBoundaryEnd(bytes: Buffer): number {
  const lf = bytes.lastIndexOf(LF_BOUNDARY);
  // Most streams end lines with LF only: the CR forms are looked for only where a CR is.
  if (bytes.indexOf(CR) < 0) return lf < 0 ? -1 : lf + 2;
  let end = -1;
  for (const b of BOUNDARIES) {
    const i = bytes.lastIndexOf(b);
    if (i >= 0 && i + b.length > end) end = i + b.length;
  }
  return end;
}

/** Bounded bytes: what was appended, the last `TAIL` of them kept once more than twice that is held. */
class Tail {
  private parts: Buffer[] = [];
  private length = 0;

  push(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.parts.push(bytes);
    this.length += bytes.length;
    if (this.length > 2 * TAIL) this.join();
  }

  /** The bytes held, as one buffer. */
  bytes(): Buffer {
    this.join();
    return this.parts[0] ?? Buffer.alloc(0);
  }

  /** Holds `bytes` only. */
  reset(bytes: Buffer): void {
    this.parts = bytes.length > 0 ? [bytes] : [];
    this.length = bytes.length;
  }

  private join(): void {
    if (this.parts.length <= 1 && this.length <= TAIL) return;
    const all = Buffer.concat(this.parts, this.length);
    this.reset(all.length > TAIL ? all.subarray(all.length - TAIL) : all);
  }
}

/** The data of one SSE event: its data lines without their field name, joined as SSE joins them. */
function dataOf(event: string): string {
  const lines: string[] = [];
  for (const line of event.split(LINE_SPLIT)) {
    if (line.startsWith('data:')) lines.push(line.slice(5));
    // A line cut at the front by the tail keeps its text: it can only be the end of a data line.
    else if (!NOT_DATA.test(line)) lines.push(line);
  }
  return lines.join('\n');
}

/**
 * One answer's usage reader. Feed it the answer's bytes in order (`write`), then `end()`: the
 * provider's usage object as it reported it, merged across events, or undefined when the answer
 * reported none (or could not be read: a compressed answer, a cut stream).
 */
export class UsageTap {
  /** SSE: the current event so far (its end, when long); otherwise the answer's end. */
  private readonly held = new Tail();
  /** The last bytes written, so that a mention split across two chunks is seen. */
  private edge = Buffer.alloc(0);
  /** SSE: the current event mentions usage (it is parsed when it ends). */
  private mentioned = false;
  private usage: Record<string, unknown> | undefined;

  constructor(private readonly sse: boolean) {}

  write(chunk: Uint8Array): void {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (!this.sse) {
      this.held.push(bytes);
      return;
    }
    const mentions = this.mentioned || bytes.includes(MENTION) || this.straddles(bytes);
    if (!mentions) {
      this.keepEdge(bytes);
      const end = lastBoundaryEnd(bytes);
      if (end < 0) this.held.push(bytes);
      else this.held.reset(bytes.subarray(end));
      return;
    }
    // Only the new bytes (and the few before them, for a boundary they complete) are searched:
    // the event held so far was searched as it arrived, so a long event that mentions usage, cut
    // into small writes, costs its length once, not once a write (issue 39).
    const end = this.boundaryIn(bytes);
    this.keepEdge(bytes);
    if (end < 0) {
      this.held.push(bytes);
      this.mentioned = true;
      return;
    }
    this.held.push(bytes.subarray(0, end));
    this.parse(this.held.bytes());
    const rest = bytes.subarray(end);
    this.held.reset(Buffer.alloc(0));
    this.held.push(rest);
    this.mentioned = rest.includes(MENTION);
  }

  end(): Record<string, unknown> | undefined {
    const rest = this.held.bytes();
    if (!this.sse) this.take(rest.toString('utf8'));
    else if (rest.includes(MENTION)) this.parse(rest);
    this.held.reset(Buffer.alloc(0));
    return this.usage;
  }

  /**
   * Where the last SSE event boundary that ends in `bytes` ends, as an offset in `bytes` (a
   * boundary begun in the bytes before them counts), or -1. Reads `bytes` and `edge` only.
   */
  private boundaryIn(bytes: Buffer): number {
    const end = lastBoundaryEnd(bytes);
    if (end >= 0 || this.edge.length === 0) return end;
    // A boundary is at most 4 bytes: one ending in the first 3 began in the edge.
    const head = bytes.subarray(0, BOUNDARY_MAX - 1);
    const joined = Buffer.concat([this.edge, head]);
    const inJoined = lastBoundaryEnd(joined);
    return inJoined > this.edge.length ? inJoined - this.edge.length : -1;
  }

  /** Whether the mention begins in the previous chunk and ends in this one. */
  private straddles(bytes: Buffer): boolean {
    if (this.edge.length === 0) return false;
    return Buffer.concat([this.edge, bytes.subarray(0, MENTION.length - 1)]).includes(MENTION);
  }

  private keepEdge(bytes: Buffer): void {
    const n = MENTION.length - 1;
    this.edge =
      bytes.length >= n ? Buffer.from(bytes.subarray(bytes.length - n)) : Buffer.concat([this.edge, bytes]).subarray(-n);
  }

  /** Complete SSE events: those that mention usage are read. */
  private parse(bytes: Buffer): void {
    for (const event of bytes.toString('utf8').split(EVENT_SPLIT)) {
      if (event.includes('"usage')) this.take(dataOf(event));
    }
  }

  private take(text: string): void {
    if (!text.includes('"usage')) return;
    const found = lastUsageObject(text);
    if (found) this.usage = merge(this.usage ?? {}, found);
  }
}
