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
