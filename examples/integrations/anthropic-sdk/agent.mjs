/**
 * A tool-use loop on the Anthropic SDK (extended thinking, prompt caching) that calls Compactor's
 * `/v1/fit` before every model call and keeps the history it returns.
 */

/** @typedef {import('@anthropic-ai/sdk').default} Anthropic */
/** @typedef {import('@anthropic-ai/sdk').default.MessageParam} MessageParam */
/** @typedef {import('@anthropic-ai/sdk').default.Usage} Usage */

/** The system prompt, with a cache breakpoint: it never changes, so it is always read from the cache. */
export const SYSTEM = /** @type {import('@anthropic-ai/sdk').default.TextBlockParam[]} */ ([
  {
    type: 'text',
    text: 'You are a careful coding agent. Read the files you need with read_file, then answer in one sentence.',
    cache_control: { type: 'ephemeral' },
  },
]);

/** @type {import('@anthropic-ai/sdk').default.Tool[]} */
export const TOOLS = [
  {
    name: 'read_file',
    description: 'Read a file of the repository',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];

/** A simulated read_file: about 3,000 tokens of made-up TypeScript for any path. */
export function readFile(/** @type {string} */ path) {
  const lines = [`// ${path}`, "import { z } from 'zod';", ''];
  for (let i = 0; lines.join('\n').length < 11_000; i++) {
    lines.push(
      `export function handler${i}(input: Record<string, unknown>, limit = ${(i * 7919) % 997}): number {`,
      `  const value = Number(input['field_${i}'] ?? ${i}) * limit; // ${path.replace(/\W/g, '_')}:${i}`,
      `  if (value > ${(i * 104729) % 10_000}) throw new RangeError('handler${i}: over the limit');`,
      '  return value;',
      '}',
    );
  }
  return lines.join('\n');
}

/**
 * The history as sent: a copy whose last block carries a cache breakpoint, so each call writes its
 * whole prompt to the cache and the next one reads it. The stored history carries none (Anthropic
 * allows four breakpoints per request; marking every turn would exceed that).
 * @param {MessageParam[]} messages
 * @returns {MessageParam[]}
 */
export function withCacheBreakpoint(messages) {
  const last = messages.at(-1);
  if (!last) return messages;
  const blocks = typeof last.content === 'string' ? [{ type: /** @type {const} */ ('text'), text: last.content }] : last.content;
  const marked = blocks.map((b, i) =>
    i === blocks.length - 1 ? { ...b, cache_control: { type: /** @type {const} */ ('ephemeral') } } : b,
  );
  return [...messages.slice(0, -1), { ...last, content: /** @type {any} */ (marked) }];
}

/**
 * @param {{anthropic: Anthropic, compactor: import('@compactor/client').CompactorClient, model: string,
 *   contextWindow?: number, tasks: string[], maxSteps?: number, log?: (line: string) => void}} options
 * @returns {Promise<{answers: string[], messages: MessageParam[]}>}
 */
export async function runAgent({ anthropic, compactor, model, contextWindow, tasks, maxSteps = 10, log = () => {} }) {
  /** @type {MessageParam[]} */
  let messages = [];
  /** @type {Usage | undefined} */
  let usage;
  let covered = 0;
  /** @type {string[]} */
  const answers = [];
  for (const task of tasks) {
    messages.push({ role: 'user', content: task });
    for (let step = 1; step <= maxSteps; step++) {
      // --- Compactor: fit the history before the call; send usage of the previous call with messages_covered.
      const fitted = await compactor.fit({
        format: 'anthropic',
        model,
        system: SYSTEM,
        tools: TOOLS,
        messages,
        target_fraction: 0.5,
        ...(contextWindow ? { context_window: contextWindow } : {}),
        // Keep only the newest tool result whole; old turns' thinking may go, the turn in progress always keeps it.
        compact: { keep_tool_uses: 1, clear_thinking: { keep_turns: 0 } },
        ...(usage ? { usage: { ...usage, messages_covered: covered } } : {}),
      });
      messages = fitted.messages; // keep the returned history as our own from now on
      log(
        `fit: ${messages.length} messages, ${fitted.applied ? `reduced ${fitted.tokens.before} -> ${fitted.tokens.after} (${fitted.stages.filter((s) => s.applied).map((s) => s.strategy)})` : `kept ${fitted.tokens.before} (${fitted.reason})`}`,
      );
      // ---
      const reply = await anthropic.messages.create({
        model,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        system: SYSTEM,
        tools: TOOLS,
        messages: withCacheBreakpoint(messages),
      });
      messages.push({ role: 'assistant', content: reply.content }); // thinking blocks and signatures as they came
      usage = reply.usage;
      covered = messages.length; // the prompt plus the reply this usage covers
      if (reply.stop_reason !== 'tool_use') {
        answers.push(reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''));
        break;
      }
      /** @type {import('@anthropic-ai/sdk').default.ToolResultBlockParam[]} */
      const results = reply.content.flatMap((b) =>
        b.type === 'tool_use'
          ? [{ type: 'tool_result', tool_use_id: b.id, content: readFile(String(/** @type {any} */ (b.input).path)) }]
          : [],
      );
      messages.push({ role: 'user', content: results });
    }
  }
  return { answers, messages };
}
