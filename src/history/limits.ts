import { CompactorError } from '../errors.js';

/** How deep a message may nest: far beyond any provider's shapes, far below the stack's limit. */
export const MAX_DEPTH = 128;

/**
 * Rejects a value nested deeper than `MAX_DEPTH` with a 400, before anything recursive (the
 * response serializer, `JSON.stringify` of unknown parts) can overflow the stack on it. Walks
 * objects and arrays only, never the characters of strings: cheap on real messages.
 */
export function checkDepth(value: unknown, path: string): void {
  if (typeof value !== 'object' || value === null) return;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (depth > MAX_DEPTH) {
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', `${path}: nested more than ${MAX_DEPTH} levels deep`, [
        { path, message: `nested more than ${MAX_DEPTH} levels deep` },
      ]);
    }
    const children = Array.isArray(node) ? node : Object.values(node as object);
    for (const child of children) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
}
