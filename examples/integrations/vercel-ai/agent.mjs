/**
 * A multi-step tool loop on the Vercel AI SDK (`generateText` with tools and a stop condition),
 * with Compactor's `/v1/fit` in `prepareStep`, on the OpenAI (Chat Completions) or Anthropic provider.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { fitBeforeEachStep } from './fit-step.mjs';

/** A coding agent's system prompt with its project guide: long enough (about 1,500 tokens) for OpenAI to cache. */
export const SYSTEM = [
  'You are a careful coding agent. Read the files you need with read_file, then answer in one sentence.',
  '',
  '# Project guide',
  ...Array.from(
    { length: 60 },
    (_, i) =>
      `- Rule ${i + 1}: module ${i} keeps its public functions pure and documents every option it reads (see docs/module-${i}.md).`,
  ),
].join('\n');

const readFileSchema = {
  type: /** @type {const} */ ('object'),
  properties: { path: { type: /** @type {const} */ ('string') } },
  required: ['path'],
};

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
 * Anthropic prompt caching in the AI SDK: a cache breakpoint on the last message only. The SDK keeps
 * prepareStep's messages as its state, so earlier breakpoints are removed (Anthropic allows four).
 * @param {import('ai').ModelMessage[]} messages
 */
function withCacheBreakpoint(messages) {
  return messages.map((m, i) => {
    const { cacheControl: _, ...anthropic } = /** @type {any} */ (m.providerOptions?.anthropic ?? {});
    const providerOptions = {
      ...m.providerOptions,
      anthropic: i === messages.length - 1 ? { ...anthropic, cacheControl: { type: 'ephemeral' } } : anthropic,
    };
    return /** @type {import('ai').ModelMessage} */ ({ ...m, providerOptions });
  });
}

/**
 * @param {{provider: 'openai' | 'anthropic', baseURL: string, compactor: import('@compactor/client').CompactorClient,
 *   contextWindow?: number, task: string, onFit?: (answer: any) => void}} options
 */
export async function runAgent({ provider, baseURL, compactor, contextWindow, task, onFit }) {
  const anthropic = provider === 'anthropic';
  const modelId = anthropic ? 'claude-sonnet-4-5' : 'gpt-4o';
  const model = anthropic
    ? createAnthropic({ apiKey: 'sk-ant-fake', baseURL: `${baseURL}/v1` })(modelId)
    : createOpenAI({ apiKey: 'sk-fake', baseURL: `${baseURL}/v1` }).chat(modelId); // .chat: Chat Completions, not Responses
  const fit = fitBeforeEachStep({
    compactor,
    format: anthropic ? 'anthropic' : 'openai-chat',
    model: modelId,
    system: SYSTEM,
    tools: [{ name: 'read_file', input_schema: readFileSchema }],
    ...(contextWindow ? { contextWindow } : {}),
    fit: { target_fraction: 0.5, compact: { keep_tool_uses: 1, ...(anthropic ? { clear_thinking: { keep_turns: 0 } } : {}) } },
    ...(onFit ? { onFit } : {}),
  });
  return generateText({
    model,
    instructions: anthropic
      ? { role: 'system', content: SYSTEM, providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }
      : SYSTEM,
    messages: [{ role: 'user', content: task }],
    tools: {
      read_file: tool({
        description: 'Read a file of the repository',
        inputSchema: jsonSchema(readFileSchema),
        execute: async (/** @type {any} */ { path }) => readFile(path),
      }),
    },
    stopWhen: isStepCount(12),
    maxRetries: 0,
    ...(anthropic ? { providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } } } : {}),
    prepareStep: async (step) => {
      const prepared = await fit(step);
      return anthropic && prepared?.messages ? { ...prepared, messages: withCacheBreakpoint(prepared.messages) } : prepared;
    },
  });
}
