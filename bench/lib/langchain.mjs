/**
 * The @langchain/core side of the in-process comparison: OpenAI Chat messages converted to
 * LangChain message objects (done once, outside any timed region) and a token counter for
 * `trimMessages` that counts exactly what the Compactor counts, with a per-message cache.
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/** The Compactor's counting options: special-token strings count as plain text. */
export const AS_TEXT = { disallowedSpecial: new Set() };

/** OpenAI's per-message framing, as the Compactor adds it. */
const PER_MESSAGE = 3;

/** OpenAI Chat messages -> LangChain messages. Each gets a unique `id` (the cache key). */
export function toLangChain(messages) {
  return messages.map((m, i) => {
    const id = `m${i}`;
    const content = m.content ?? '';
    switch (m.role) {
      case 'system':
      case 'developer':
        return new SystemMessage({ id, content });
      case 'user':
        return new HumanMessage({ id, content });
      case 'assistant': {
        const raw = m.tool_calls ?? [];
        return new AIMessage({
          id,
          content,
          tool_calls: raw.map((c) => ({
            id: c.id,
            name: c.function.name,
            args: JSON.parse(c.function.arguments),
            type: 'tool_call',
          })),
          additional_kwargs: {
            ...(raw.length ? { tool_calls: raw } : {}),
            ...(typeof m.reasoning_content === 'string' ? { reasoning_content: m.reasoning_content } : {}),
          },
        });
      }
      case 'tool':
        return new ToolMessage({ id, content, tool_call_id: m.tool_call_id });
      default:
        throw new Error(`unsupported role ${m.role}`);
    }
  });
}

/** The text the Compactor's openai-chat adapter counts for a message, in the same order. */
function textOf(msg) {
  const parts = [];
  const add = (v) => {
    if (typeof v === 'string' && v.length > 0) parts.push(v);
  };
  add(msg.additional_kwargs?.reasoning_content);
  add(msg.content);
  for (const c of msg.additional_kwargs?.tool_calls ?? []) {
    add(c.function?.name);
    add(c.function?.arguments);
  }
  return parts.join('\n');
}

/** Tokens of one message, uncached: o200k_base + per-message framing. */
export function countMessage(msg) {
  const text = textOf(msg);
  return (text.length ? countTokens(text, AS_TEXT) : 0) + PER_MESSAGE;
}

/**
 * A `tokenCounter` for trimMessages with a per-message cache keyed by message id.
 * trimMessages copies the messages it receives (the copies keep `id`) and calls its counter on
 * ever shorter prefixes of the whole reversed history, so without this cache it re-tokenizes
 * the history once per call.
 * @param {Map<string, number>} cache
 */
export function cachedCounter(cache) {
  const one = (msg) => {
    let n = cache.get(msg.id);
    if (n === undefined) {
      n = countMessage(msg);
      cache.set(msg.id, n);
    }
    return n;
  };
  return (msgs) => {
    let total = 0;
    for (const m of msgs) total += one(m);
    return total;
  };
}
