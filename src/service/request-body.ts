import { isAscii, isUtf8 } from 'node:buffer';
import sjson from 'secure-json-parse';
import type { z } from 'zod';
import { CompactorError, validationError } from '../errors.js';
import { tagHistories } from '../tokens/content-tag.js';

/**
 * JSON bodies are parsed with `__proto__` and `constructor.prototype` keys refused (prototype
 * pollution), each failure with its own code; given the bytes it was decoded from, the messages of
 * its history are tagged by them (`tokens/content-tag.ts`: what a later call with the same prefix
 * finds again).
 */
export function parseJsonBody(body: string, bytes?: Uint8Array): unknown {
  const parsed = parseJson(body);
  if (bytes) tagHistories(bytes, parsed);
  return parsed;
}

/** The refusal of a body holding a key `sjson` refuses (`__proto__`, `constructor.prototype`). */
const forbiddenKey = () =>
  new CompactorError(
    'CMP_ERR_REQUEST_FORBIDDEN_KEY',
    'the body contains __proto__ or constructor.prototype keys, which are refused',
  );

function parseJson(body: string): unknown {
  if (body.length === 0 || body.trim().length === 0) {
    throw new CompactorError('CMP_ERR_REQUEST_EMPTY_BODY', 'the body is empty; send a JSON object');
  }
  try {
    return sjson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/prototype/i.test(message)) throw forbiddenKey();
    if (error instanceof RangeError)
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', 'the body is nested too deeply to parse');
    throw new CompactorError('CMP_ERR_REQUEST_INVALID_JSON', `the body is not valid JSON (${message.slice(0, 120)})`);
  }
}

/** Bytes checked at once for a non-ASCII one (natively) before the bytes of a block are looked at one by one. */
const BLOCK = 4096;
const BACKSLASH = 0x5c;

/**
 * The text of a body as a one-byte string that parses to the same value, or undefined where that
 * is not sure: each maximal run of non-ASCII bytes (valid UTF-8, not after a backslash) is written
 * as JSON `\u` escapes of its UTF-16 units. Inside a JSON string an escape and the character it
 * names are the same value; outside one both are a syntax error. Decoding UTF-8 into a two-byte
 * string, and parsing that, cost about twice what a one-byte string does (a history with a dozen
 * non-ASCII characters is all two-byte).
 */
function oneByteText(bytes: Buffer): string | undefined {
  const n = bytes.length;
  if (isAscii(bytes)) return bytes.toString('latin1');
  // The escaped bytes are gathered into one buffer and decoded once: a string built piece by piece
  // is flattened again (a copy of the whole body) by the first scan over it.
  const pieces: Buffer[] = [];
  let from = 0;
  let i = 0;
  while (i < n) {
    const end = Math.min(n, i + BLOCK);
    if (isAscii(bytes.subarray(i, end))) {
      i = end;
      continue;
    }
    while ((bytes[i] as number) < 0x80) i++;
    let j = i + 1;
    while (j < n && (bytes[j] as number) >= 0x80) j++;
    const run = bytes.subarray(i, j);
    if (bytes[i - 1] === BACKSLASH || !isUtf8(run)) return undefined;
    const chars = run.toString('utf8');
    let escaped = '';
    for (let k = 0; k < chars.length; k++) escaped += `\\u${chars.charCodeAt(k).toString(16).padStart(4, '0')}`;
    pieces.push(bytes.subarray(from, i), Buffer.from(escaped, 'latin1'));
    from = j;
    i = j;
  }
  pieces.push(bytes.subarray(from, n));
  return Buffer.concat(pieces).toString('latin1');
}

const own = Object.prototype.hasOwnProperty;

/**
 * Whether a parsed value holds what `sjson` refuses (`protoAction` and `constructorAction`
 * `error`): an object with its own `__proto__` key, or a `constructor` key whose value is an
 * object with its own `prototype` key. sjson walks the value only where a search of the text finds
 * such a key; the walk itself (each object once, with a stack) costs a tenth of that search.
 */
function forbidden(root: unknown): boolean {
  if (root === null || typeof root !== 'object') return false;
  const stack: object[] = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (own.call(node, '__proto__')) return true;
    if (own.call(node, 'constructor')) {
      const c = (node as { constructor: unknown }).constructor;
      if (c !== null && typeof c === 'object' && own.call(c, 'prototype')) return true;
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const value: unknown = node[i];
        if (value !== null && typeof value === 'object') stack.push(value);
      }
      continue;
    }
    for (const key in node) {
      const value: unknown = (node as Record<string, unknown>)[key];
      if (value !== null && typeof value === 'object') stack.push(value);
    }
  }
  return false;
}

/**
 * A JSON body from its bytes, the value and every refusal the same as `parseJsonBody` of its UTF-8
 * text: parsed as a one-byte string (`oneByteText`), then walked for the keys `sjson` refuses (a
 * body holding one is refused as sjson refuses it); on a parse failure, or where the one-byte text
 * is not sure, parsed by `parseJsonBody` itself (whose refusal names the error as the text has
 * it). Its histories' messages are tagged as there.
 */
export function parseJsonBytes(bytes: Buffer): unknown {
  const text = oneByteText(bytes);
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Refused as the UTF-8 text has it.
      return parseJsonBody(bytes.toString('utf8'), bytes);
    }
    // Refused at once, as sjson refuses it: valid JSON, so its refusal could be nothing else (not parsed twice).
    if (forbidden(parsed)) throw forbiddenKey();
    // Tagged from the bytes, as `parseJsonBody` tags them.
    tagHistories(bytes, parsed);
    return parsed;
  }
  // Where the one-byte text is not sure: as `parseJsonBody` of the UTF-8 text.
  return parseJsonBody(bytes.toString('utf8'), bytes);
}

/**
 * A parsed body checked against its schema, typed by it; otherwise the 400 naming each field that
 * the route's own validator (fastify-type-provider-zod) would give, issue for issue.
 */
export function checkBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw validationError(
    result.error.issues.map(({ path, code, message, ...params }) => ({
      keyword: code,
      instancePath: `/${path.join('/')}`,
      message,
      params,
    })),
  );
}
