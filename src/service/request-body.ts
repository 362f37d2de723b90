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

function parseJson(body: string): unknown {
  if (body.length === 0 || body.trim().length === 0) {
    throw new CompactorError('CMP_ERR_REQUEST_EMPTY_BODY', 'the body is empty; send a JSON object');
  }
  try {
    return sjson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/prototype/i.test(message)) {
      throw new CompactorError(
        'CMP_ERR_REQUEST_FORBIDDEN_KEY',
        'the body contains __proto__ or constructor.prototype keys, which are refused',
      );
    }
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

/**
 * What `sjson` looks for before it scans a parsed body for forbidden keys, found more cheaply: each
 * of its two patterns matches only where the text holds the key as written or an escape of an
 * ASCII letter or underscore (`\u005…`, `\u006…`, `\u007…`).
 */
function suspect(bytes: Buffer): boolean {
  if (bytes.includes('"__proto__"') || bytes.includes('"constructor"')) return true;
  // Searched natively; each `\u00` found is looked at once (no pass goes back).
  for (let at = bytes.indexOf('\\u00'); at >= 0; at = bytes.indexOf('\\u00', at + 4)) {
    const digit = bytes[at + 4];
    if (digit !== undefined && digit >= 0x35 && digit <= 0x37) return true;
  }
  return false;
}

/**
 * A JSON body from its bytes, the value and every refusal the same as `parseJsonBody` of its UTF-8
 * text: parsed as a one-byte string (`oneByteText`) with `sjson`'s checks where they may apply; on
 * any failure, or where the one-byte text is not sure, parsed by `parseJsonBody` itself (whose
 * refusal names the error as the text has it). Its histories' messages are tagged as there.
 */
export function parseJsonBytes(bytes: Buffer): unknown {
  const text = oneByteText(bytes);
  if (text !== undefined && !suspect(bytes)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Refused below, as the UTF-8 text has it.
      return parseJsonBody(bytes.toString('utf8'), bytes);
    }
    // Tagged from the bytes, as `parseJsonBody` tags them.
    tagHistories(bytes, parsed);
    return parsed;
  }
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
