/**
 * Reads the usage a provider reports out of a copy of its answer, as the answer streams past:
 * Anthropic `message_start` and `message_delta` events, Responses `response.completed`, a Chat
 * Completions chunk's (or answer's) `usage`, Gemini's `usageMetadata`. Never more than `TAIL`
 * bytes of one event (or of a JSON answer) are held: the usage object sits at the end of each
 * (after the output), so an answer of any size is read in bounded memory and linear time, and a
 * parse never holds the client's bytes (the tap sees a copy, after they were written).
 */

/** Bytes of an event or answer kept to find its usage in: its end. */
export const TAIL = 256 * 1024;

const KEYS = ['"usage":', '"usageMetadata":'];

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

/** A bounded text: what was appended, the last `TAIL` characters of it kept. */
class Tail {
  private parts: string[] = [];
  private length = 0;

  push(text: string): void {
    this.parts.push(text);
    this.length += text.length;
    if (this.length > 2 * TAIL) this.trim();
  }

  text(): string {
    this.trim();
    return this.parts.join('');
  }

  clear(): void {
    this.parts = [];
    this.length = 0;
  }

  private trim(): void {
    const all = this.parts.join('');
    const kept = all.length > TAIL ? all.slice(all.length - TAIL) : all;
    this.parts = [kept];
    this.length = kept.length;
  }
}

/**
 * One answer's usage reader. Feed it the answer's bytes in order (`write`), then `end()`: the
 * provider's usage object as it reported it, merged across events, or undefined when the answer
 * reported none (or could not be read: a compressed answer, a cut stream).
 */
export class UsageTap {
  private readonly decoder = new TextDecoder();
  private readonly event = new Tail();
  private usage: Record<string, unknown> | undefined;
  /** The current SSE line so far (its end when it is long), and whether it is a `data:` line. */
  private pending = '';
  private pendingData: boolean | undefined;

  constructor(private readonly sse: boolean) {}

  write(chunk: Uint8Array): void {
    const text = this.decoder.decode(chunk, { stream: true });
    if (!this.sse) {
      this.event.push(text);
      return;
    }
    this.lines(text);
  }

  end(): Record<string, unknown> | undefined {
    const rest = this.decoder.decode();
    if (!this.sse) {
      this.event.push(rest);
      this.take(this.event.text());
      return this.usage;
    }
    this.lines(`${rest}\n\n`);
    return this.usage;
  }

  /** SSE: events end at a blank line; an event's `data:` lines are what is read. */
  private lines(text: string): void {
    let from = 0;
    for (;;) {
      const nl = text.indexOf('\n', from);
      const piece = text.slice(from, nl < 0 ? text.length : nl);
      this.pending += piece;
      if (this.pendingData === undefined && this.pending.length >= 5) this.pendingData = this.pending.startsWith('data:');
      if (nl < 0) {
        // A long line (an answer's whole output in one event) keeps its end only.
        if (this.pending.length > TAIL) {
          if (this.pendingData) this.event.push(this.pending.slice(0, this.pending.length - 5));
          this.pending = this.pending.slice(this.pending.length - 5);
          this.pendingData = this.pendingData && true;
        }
        return;
      }
      from = nl + 1;
      const line = this.pending.replace(/\r$/, '');
      const data = this.pendingData ?? line.startsWith('data:');
      this.pending = '';
      this.pendingData = undefined;
      if (line === '') {
        this.take(this.event.text());
        this.event.clear();
      } else if (data) this.event.push(line.startsWith('data:') ? line.slice(5) : line);
    }
  }

  private take(text: string): void {
    if (!text.includes('"usage')) return;
    const found = lastUsageObject(text);
    if (found) this.usage = merge(this.usage ?? {}, found);
  }
}
