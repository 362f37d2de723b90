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
  // Two parallel stacks and a keyed walk: no pair or values array made per node.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop() as object;
    const depth = depths.pop() as number;
    if (depth > MAX_DEPTH) {
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', `${path}: nested more than ${MAX_DEPTH} levels deep`, [
        { path, message: `nested more than ${MAX_DEPTH} levels deep` },
      ]);
    }
    if (Array.isArray(node)) {
      for (const child of node) {
        if (typeof child === 'object' && child !== null) {
          nodes.push(child);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const child = record[key];
      if (typeof child === 'object' && child !== null && Object.hasOwn(record, key)) {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
}
