import type { CacheReport, JsonValue } from './types.js';

/** Cache breakpoints mark where to cache, not what: moving one (as clients do each turn) keeps the prefix. */
function withoutBreakpoints(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value;
}

/**
 * A prompt as a provider's cache sees it, in the order it is cached (tools, then the system
 * prompt, then the history item by item): each segment is that part's JSON text, without
 * Anthropic's `cache_control` markers.
 */
export function promptSegments(tools: JsonValue | undefined, system: JsonValue | undefined, history: JsonValue[]): string[] {
  const json = (value: JsonValue | undefined) => JSON.stringify(value ?? null, withoutBreakpoints);
  return [json(tools), json(system), ...history.map(json)];
}

/** Length of the common prefix of two strings. */
function commonChars(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * The common prefix of two prompts, segment by segment: its length in characters and the first
 * segment of `earlier` that `now` does not repeat whole (-1 when `earlier` is a prefix of `now`:
 * the conversation only grew).
 */
export function segmentPrefix(earlier: readonly string[], now: readonly string[]): { chars: number; brokeAt: number } {
  let chars = 0;
  for (let i = 0; i < earlier.length; i++) {
    const a = earlier[i] ?? '';
    const b = now[i];
    if (b === a) {
      chars += a.length;
      continue;
    }
    return { chars: chars + (b === undefined ? 0 : commonChars(a, b)), brokeAt: i };
  }
  return { chars, brokeAt: -1 };
}

/** Tokens of a prompt of `chars` characters: the fake provider's simple count (chars / 4, rounded up). */
export function tokensOf(chars: number): number {
  return Math.ceil(chars / 4);
}

/**
 * A simulated prompt cache: each conversation remembers its last `depth` prompts, and a new prompt
 * reads from the cache its longest common prefix with any of them. A prefix that broke shows as
 * `brokeAtSegment` (the segment of the best earlier prompt that was not repeated), so a test can
 * see where a client or a proxy rewrote history.
 */
export class PrefixCache {
  private readonly seen = new Map<string, string[][]>();

  /** @param depth how many earlier prompts each conversation keeps (default 16). */
  constructor(private readonly depth = 16) {}

  /** Reports the cached prefix of `segments` in `conversation`, then remembers them. */
  observe(conversation: string, segments: string[]): CacheReport {
    const earlier = this.seen.get(conversation) ?? [];
    let best: { chars: number; brokeAt: number } | undefined;
    for (const previous of earlier) {
      const match = segmentPrefix(previous, segments);
      // The longest prefix wins; between equals, one that only grew (nothing broke).
      if (!best || match.chars > best.chars || (match.chars === best.chars && match.brokeAt === -1)) best = match;
    }
    best ??= { chars: 0, brokeAt: -1 };
    earlier.push(segments);
    if (earlier.length > this.depth) earlier.shift();
    this.seen.set(conversation, earlier);
    return {
      promptChars: segments.reduce((n, s) => n + s.length, 0),
      commonChars: best.chars,
      brokeAtSegment: best.brokeAt,
    };
  }

  /** Forgets every conversation. */
  clear(): void {
    this.seen.clear();
  }
}
