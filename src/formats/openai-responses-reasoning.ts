import type { Item, Violation } from '../history/types.js';
import type { JsonObject } from './shared.js';

/**
 * The rules of OpenAI Responses reasoning items. The items of one model response (a reasoning
 * item, then the message and calls it led to) follow each other, each after the first marked
 * `joinsPrevious`.
 */

/** Reasoning items not followed, in the same response, by what they reasoned towards. */
export function orphanReasoning(items: readonly Item[]): Violation[] {
  const out: Violation[] = [];
  items.forEach((item, i) => {
    if (item.thinking && !items[i + 1]?.joinsPrevious) {
      out.push({
        index: i,
        rule: 'orphan_reasoning',
        message: 'a reasoning item must be followed by the message or call of the same response',
      });
    }
  });
  return out;
}

/**
 * Why reasoning item `index` must stay, or undefined when it may go. The items of one response
 * (`joinsPrevious`) that carry their server `id` (`msg_…`, `fc_…`) are tied by it to the response's
 * reasoning item: the Responses API rejects such an item whose reasoning item is missing ("was
 * provided without its required 'reasoning' item"). Items sent without ids are not tied.
 */
export function reasoningTie(items: readonly Item[], index: number): string | undefined {
  let start = index;
  while (start > 0 && items[start]?.joinsPrevious) start--;
  for (let k = start; k < items.length && (k === start || items[k]?.joinsPrevious); k++) {
    const item = items[k] as Item;
    const id = (item.original as JsonObject).id;
    if (!item.thinking && typeof id === 'string') {
      return `an item of the same response carries its server id (messages[${k}].id ${JSON.stringify(id)}), and the Responses API rejects it without its reasoning item`;
    }
  }
  return undefined;
}
