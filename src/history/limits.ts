import { CompactorError } from '../errors.js';

/** How deep a message may nest: far beyond any provider's shapes, far below the stack's limit. */
export const MAX_DEPTH = 128;

/**
 * The walk's two stacks, kept between calls and never shrunk (a walk is synchronous and never
 * nested): no array is made or grown per message. A slot is emptied as it is taken, so nothing
 * walked is held after the walk.
 */
const nodes: (object | undefined)[] = [];
const depths: number[] = [];

/**
 * Rejects a value nested deeper than `MAX_DEPTH` with a 400, before anything recursive (the
 * response serializer, `JSON.stringify` of unknown parts) can overflow the stack on it. Walks
 * objects and arrays only, never the characters of strings: cheap on real messages. `path` names
 * the value in the error, `index` its place in the list `path` names (`messages[3]`: joined only then).
 */
export function checkDepth(value: unknown, path: string, index?: number): void {
  if (typeof value !== 'object' || value === null) return;
  nodes[0] = value;
  depths[0] = 1;
  let top = 1;
  while (top > 0) {
    top--;
    const node = nodes[top] as object;
    const depth = depths[top] as number;
    nodes[top] = undefined;
    if (depth > MAX_DEPTH) {
      nodes.fill(undefined, 0, top);
      const where = index === undefined ? path : `${path}[${index}]`;
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', `${where}: nested more than ${MAX_DEPTH} levels deep`, [
        { path: where, message: `nested more than ${MAX_DEPTH} levels deep` },
      ]);
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (typeof child === 'object' && child !== null) {
          nodes[top] = child;
          depths[top++] = depth + 1;
        }
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const child = record[key];
      if (typeof child === 'object' && child !== null && Object.hasOwn(record, key)) {
        nodes[top] = child;
        depths[top++] = depth + 1;
      }
    }
  }
}
