import { LRUCache } from 'lru-cache';
import { fieldError } from '../errors.js';
import type { Countable } from '../history/format.js';
import { MAX_DEPTH } from '../history/limits.js';
import type { Item } from '../history/types.js';
import { MAX_KEY_CHARS } from '../tokens/derived.js';

export type JsonObject = Record<string, unknown>;

/** A plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `table[key]` among the table's own keys only: a key from the request such as `constructor` or
 * `toString` must not find what every object inherits.
 */
export function lookup<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Throws the malformed-message error for one field of the history. */
export function malformed(path: string, message: string): never {
  throw fieldError('CMP_ERR_HISTORY_MALFORMED', path, message);
}

/** A short name of a JSON value's type, for error messages. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function expectString(value: unknown, path: string): string {
  if (typeof value !== 'string') malformed(path, `must be a string, got ${typeName(value)}`);
  return value;
}

export function expectOptionalString(value: unknown, path: string): void {
  if (value !== undefined) expectString(value, path);
}

export function expectRecord(value: unknown, path: string): JsonObject {
  if (!isRecord(value)) malformed(path, `must be an object, got ${typeName(value)}`);
  return value;
}

export function expectArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) malformed(path, `must be an array, got ${typeName(value)}`);
  return value;
}

/** Accumulates a message's countable content. */
export class CountableBuilder {
  private readonly parts: string[] = [];
  images = 0;
  documents = 0;
  audio = 0;

  text(value: unknown): this {
    if (typeof value === 'string' && value.length > 0) this.parts.push(value);
    return this;
  }

  /** Counts an unrecognised value by its JSON text: unknown content still occupies context. */
  json(value: unknown): this {
    if (value !== undefined) this.parts.push(typeof value === 'string' ? value : JSON.stringify(value));
    return this;
  }

  build(): Countable {
    return { text: this.parts.join('\n'), images: this.images, documents: this.documents, audio: this.audio };
  }
}

/** Whether a content value is empty: an empty string or an empty array. */
export function isEmptyContent(content: unknown): boolean {
  return content === '' || (Array.isArray(content) && content.length === 0);
}

/** A system instruction given as a string, or anything else counted as its JSON text. */
export function plainSystemText(system: unknown): string {
  return systemTextOf(system);
}

/**
 * The text of a top-level system prompt: a string as it is; the format's text blocks, when it has
 * them, joined by newlines (a block without text as JSON); anything else as JSON.
 */
export function systemTextOf(system: unknown, blocks?: unknown): string {
  if (typeof system === 'string') return system;
  if (Array.isArray(blocks))
    return blocks.map((b) => (isRecord(b) && typeof b.text === 'string' ? b.text : JSON.stringify(b))).join('\n');
  return system === undefined ? '' : JSON.stringify(system);
}

/** Whether a JSON value nests objects and arrays more than `max` levels deep. Iterative: any depth is safe. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Tool-call arguments sent as a JSON string (OpenAI Chat `function.arguments`, Responses
 * `arguments`): the object they encode, or undefined when they are not a JSON object or nest more
 * than `MAX_DEPTH` levels deep. Undefined arguments are opaque text, as a custom tool's input is:
 * kept and counted as they came, never read by placeholders, `clear_tool_inputs` or summaries.
 * `JSON.parse` accepts any depth, but what reads the value afterwards (`JSON.stringify`, walks)
 * recurses; the service never needs to understand such arguments, so they are not a 400.
 */
export function parseArgs(text: unknown): Record<string, unknown> | undefined {
  if (typeof text !== 'string') return undefined;
  const known = text.length <= MAX_KEY_CHARS ? parsedArgs.get(text) : undefined;
  if (known !== undefined) return known === NOT_AN_OBJECT ? undefined : known;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const parsed = isRecord(value) && !nestsDeeperThan(value, MAX_DEPTH) ? deepFreeze(value) : undefined;
  if (text.length <= MAX_KEY_CHARS) parsedArgs.set(text, parsed ?? NOT_AN_OBJECT);
  return parsed;
}

/** What `parsedArgs` keeps for arguments that are no JSON object (so they are not parsed again either). */
const NOT_AN_OBJECT: Record<string, unknown> = Object.freeze({});

/**
 * Parsed tool-call arguments by their text (the same calls come back on every call of a
 * conversation, and each is read several times per call): 16 MiB, least recently used out. The
 * values are frozen, so that no reader can change what another request (or another caller, whose
 * arguments were the same text) reads. Content alone: nothing here depends on the caller.
 */
const parsedArgs = new LRUCache<string, Record<string, unknown>>({
  maxSize: 16 * 1024 * 1024,
  sizeCalculation: (_, text) => 8 * text.length + 64,
});

/** A JSON value frozen all the way down (iterative: its depth was checked, but no recursion is needed). */
function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  return value;
}

/** The order rule of formats whose roles alternate and start with the user (Anthropic, Gemini). */
export function alternates(prev: Item | undefined, next: Item): boolean {
  return prev ? prev.role !== next.role : next.role === 'user';
}

/**
 * Whether a message carries a thought signature anywhere (Gemini's `thoughtSignature`, on a part or
 * in an OpenAI-compatible message's extra content): a summary standing for it in the current turn
 * must carry the placeholder signature the provider accepts.
 */
export function carriesThoughtSignature(message: unknown): boolean {
  return JSON.stringify(message).includes('houghtSignature');
}

/** Whether a message's `content` is one string (Chat, Anthropic and Responses messages may have it so). */
export function stringContent(message: unknown): boolean {
  return typeof (message as { content?: unknown } | null)?.content === 'string';
}
