import { hash } from 'node:crypto';
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { LRUCache } from 'lru-cache';
import { CompactorError } from '../errors.js';
import type { Countable, FormatAdapter } from '../formats/types.js';
import type { Encoding, ModelProfile } from './models.js';

/** Special-token strings such as `<|endoftext|>` are counted as the text they are. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const ENCODERS: Record<Encoding, (text: string) => number> = {
  o200k_base: (text) => countO200k(text, AS_TEXT),
  cl100k_base: (text) => countCl100k(text, AS_TEXT),
};

/**
 * Byte-pair merging is quadratic in the length of one pre-tokenized piece: 100,000 repeated
 * letters take seconds, 5 MB hours. Runs that the pre-tokenizer keeps whole (letters, including
 * every non-ASCII character such as unspaced CJK text; punctuation; whitespace) longer than
 * `LONG_RUN` are therefore counted in pieces of `PIECE` characters: linear time, exact for
 * ordinary text, and off by at most one token per piece on these pathological runs only.
 */
const LONG_RUN = 512;
const PIECE = 256;

enum CharClass {
  Space = 0,
  Letter = 1,
  Digit = 2,
  Other = 3,
}

function classOf(code: number): CharClass {
  if (code === 32 || (code >= 9 && code <= 13)) return CharClass.Space;
  if (code >= 128 || (code >= 65 && code <= 90) || (code >= 97 && code <= 122)) return CharClass.Letter;
  if (code >= 48 && code <= 57) return CharClass.Digit;
  return CharClass.Other;
}

/** [start, end) pairs of runs long enough to make merging quadratic; one linear pass. */
function longRuns(text: string): number[] {
  const runs: number[] = [];
  let current = classOf(text.charCodeAt(0));
  let start = 0;
  for (let i = 1; i <= text.length; i++) {
    const k = i < text.length ? classOf(text.charCodeAt(i)) : -1;
    if (k === current) continue;
    if (current !== CharClass.Digit && i - start >= LONG_RUN) runs.push(start, i);
    current = k as CharClass;
    start = i;
  }
  return runs;
}

function countRaw(encode: (text: string) => number, text: string): number {
  if (text.length < LONG_RUN) return encode(text);
  const runs = longRuns(text);
  if (runs.length === 0) return encode(text);
  let total = 0;
  let from = 0;
  for (let r = 0; r < runs.length; r += 2) {
    const start = runs[r] as number;
    const end = runs[r + 1] as number;
    if (start > from) total += encode(text.slice(from, start));
    for (let i = start; i < end; i += PIECE) total += encode(text.slice(i, Math.min(i + PIECE, end)));
    from = end;
  }
  if (from < text.length) total += encode(text.slice(from));
  return total;
}

/** Tokens of a plain text under a profile (estimates scaled by the profile's factor). */
export function countText(profile: ModelProfile, text: string): number {
  if (text.length === 0) return 0;
  const raw = countRaw(ENCODERS[profile.encoding], text);
  return profile.exact ? raw : Math.ceil(raw * profile.factor);
}

/** Serializes a value for hashing or counting, turning over-deep nesting into a 400. */
export function jsonText(value: unknown, path: string): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch (error) {
    if (error instanceof RangeError) {
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', `${path}: nested too deeply to process`, [
        { path, message: 'nested too deeply' },
      ]);
    }
    throw error;
  }
}

export interface CounterStats {
  hits: number;
  misses: number;
  entries: number;
}

/**
 * Counts messages with a per-message cache keyed by (profile, format, content hash): an agent that
 * calls on every step with its history grown by a few messages pays tokenization for the new
 * messages only. Hashing a message costs a small fraction of tokenizing it.
 */
export class TokenCounter {
  private readonly cache: LRUCache<string, number> | undefined;
  private hits = 0;
  private misses = 0;

  /** @param cacheEntries how many message counts to keep; 0 disables the cache. */
  constructor(cacheEntries: number) {
    this.cache = cacheEntries > 0 ? new LRUCache({ max: cacheEntries }) : undefined;
  }

  /** Tokens of one message: its content, media at flat rates, and the per-message framing. */
  countMessage(format: FormatAdapter, profile: ModelProfile, message: unknown, index: number): number {
    // Serializing also guards what comes later (the response) against over-deep nesting.
    const json = jsonText(message, `messages[${index}]`);
    const key = this.cache ? `${profile.id}|${format.name}|${hash('sha1', json, 'base64')}` : '';
    const cached = this.cache?.get(key);
    if (cached !== undefined) {
      this.hits++;
      return cached;
    }
    this.misses++;
    let c: Countable;
    let text: number;
    try {
      c = format.countable(message);
      text = countText(profile, c.text);
    } catch (error) {
      if (error instanceof RangeError) jsonText(message, `messages[${index}]`);
      throw error;
    }
    const n = text + c.images * format.media.image + c.documents * format.media.document + c.audio * format.media.audio;
    const total = n + format.framing.perMessage;
    this.cache?.set(key, total);
    return total;
  }

  countMessages(format: FormatAdapter, profile: ModelProfile, messages: readonly unknown[]): number[] {
    return messages.map((m, i) => this.countMessage(format, profile, m, i));
  }

  /** Tokens of the top-level system instruction (0 when absent). */
  countSystem(format: FormatAdapter, profile: ModelProfile, system: unknown): number {
    if (system === undefined) return 0;
    jsonText(system, 'system');
    return countText(profile, format.systemText(system)) + format.framing.perMessage;
  }

  /** Tokens of the tool definitions, counted as their JSON text (0 when absent). */
  countTools(profile: ModelProfile, tools: readonly unknown[] | undefined): number {
    if (!tools || tools.length === 0) return 0;
    return countText(profile, jsonText(tools, 'tools'));
  }

  stats(): CounterStats {
    return { hits: this.hits, misses: this.misses, entries: this.cache?.size ?? 0 };
  }
}
