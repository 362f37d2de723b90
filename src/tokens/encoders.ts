import { createRequire } from 'node:module';
import type { Encoding, ModelProfile } from './models.js';
import { cutAt, longRuns } from './runs.js';

/**
 * Tokens of plain text: gpt-tokenizer's encodings, loaded on first use, their merge caches kept
 * bounded, and long pathological runs counted in pieces (linear time). `TokenCounter`
 * (`counter.ts`) caches what this counts.
 */

/** Special-token strings such as `<|endoftext|>` are counted as the text they are. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

type Tokenizer = typeof import('gpt-tokenizer/encoding/o200k_base');
type CountTokens = Tokenizer['countTokens'];

/**
 * Each encoding's rank table is megabytes of JavaScript that takes a quarter to half a second to
 * load, so it is loaded when first used (`require`, synchronous: counting is) and not when this
 * module is imported: a process that counts with one encoding never loads the other. The server
 * and its worker threads load both at start (`loadEncoders`), so no request waits for one.
 */
const require = createRequire(import.meta.url);
const MODULES: Record<Encoding, string> = {
  o200k_base: 'gpt-tokenizer/encoding/o200k_base',
  cl100k_base: 'gpt-tokenizer/encoding/cl100k_base',
};
const loaded = new Map<Encoding, Tokenizer>();

/**
 * gpt-tokenizer keeps the merges of up to 100,000 pieces in a Map that it uses as an LRU list
 * (deleted and re-inserted on every hit, the first key deleted when full). Filled with tens of
 * thousands of distinct pieces (base64, unspaced CJK, generated identifiers: one client's tool
 * output), every later count in that thread ran 7 to 15 times slower (sections mode over 500
 * sections: 0.9 s, then 6-14 s), until the cache was emptied. So every request starts by emptying
 * a cache that holds 10,000 pieces or more (`relieveEncoders`, from `parseHistory`): after the same
 * text the next request is as fast as in a fresh process (0.71-0.79 s, fresh 0.91 s), and within
 * one request the cache works as before (a text counted twice is found the second time). Emptying
 * it as often as after every count left ordinary text as fast (the corpus, 4.6 MB: within noise).
 * It is emptied after each answer too (the app's `onResponse`, the worker's task end): full, it
 * holds 38 MiB per encoding, which an idle thread then keeps no more (issue 39 #10).
 */
export const MERGE_CACHE_CLEAR_AT = 10_000;

/** How many merges the encoding's cache holds (gpt-tokenizer's internals; 0 where they differ). */
export function mergeCacheSize(encoding: Encoding): number {
  const api = loaded.get(encoding)?.default as unknown as
    | { bytePairEncodingCoreProcessor?: { mergeCache?: Map<unknown, unknown> } }
    | undefined;
  return api?.bytePairEncodingCoreProcessor?.mergeCache?.size ?? 0;
}

function tokenizer(encoding: Encoding): Tokenizer {
  let module = loaded.get(encoding);
  if (!module) {
    module = require(MODULES[encoding]) as Tokenizer;
    loaded.set(encoding, module);
  }
  return module;
}

function encoder(encoding: Encoding): CountTokens {
  return tokenizer(encoding).countTokens;
}

/** Loads every encoding now (at boot) rather than at its first use. */
export function loadEncoders(): void {
  for (const encoding of Object.keys(MODULES) as Encoding[]) tokenizer(encoding);
}

/** Empties each loaded encoding's merge cache that holds `MERGE_CACHE_CLEAR_AT` pieces or more (see above). */
export function relieveEncoders(): void {
  for (const encoding of loaded.keys()) {
    if (mergeCacheSize(encoding) >= MERGE_CACHE_CLEAR_AT) tokenizer(encoding).clearMergeCache();
  }
}

const ENCODERS: Record<Encoding, (text: string) => number> = {
  o200k_base: (text) => encoder('o200k_base')(text, AS_TEXT),
  cl100k_base: (text) => encoder('cl100k_base')(text, AS_TEXT),
};

/**
 * Byte-pair merging is quadratic in the length of one pre-tokenized piece: 100,000 repeated
 * letters take seconds, 5 MB hours. Runs that the pre-tokenizer could keep whole (see `longRuns`:
 * letters and marks, such as unspaced CJK text; punctuation and symbols, such as `—.—.` or emoji;
 * whitespace; o200k's `\r\n/` suffix) at least `LONG_RUN` long are therefore counted in pieces of
 * `PIECE` characters: linear time, exact for ordinary text (which has no such runs), and off by at
 * most about one token per piece on these pathological runs only.
 */
const LONG_RUN = 512;
const PIECE = 256;

function countRaw(encode: (text: string) => number, text: string): number {
  if (text.length < LONG_RUN) return encode(text);
  const runs = longRuns(text, LONG_RUN);
  if (runs.length === 0) return encode(text);
  let total = 0;
  let from = 0;
  for (let r = 0; r < runs.length; r += 2) {
    const start = runs[r] as number;
    const end = runs[r + 1] as number;
    if (start > from) total += encode(text.slice(from, start));
    for (let i = start; i < end; ) {
      const next = i + PIECE < end ? cutAt(text, i + PIECE) : end;
      total += encode(text.slice(i, next));
      i = next;
    }
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
