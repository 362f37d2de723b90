import { CHAT_SESSION, CHAT_USAGE, SYSTEM_PROMPT } from './session.js';

/**
 * The example session (`session.ts`) in each of the four wire formats, as an agent on that API
 * would send it: the history, its top-level system instruction where the format has one, and the
 * usage its provider reported for the last call. The OpenAPI examples are made from these; they
 * are sample histories too (tests, demos).
 */
export interface SampleHistory {
  readonly format: 'openai-chat' | 'anthropic' | 'openai-responses' | 'gemini';
  readonly model: string;
  readonly messages: readonly Record<string, unknown>[];
  readonly system?: unknown;
  readonly usage: Record<string, number>;
}

type Chat = Record<string, unknown>;
interface Call {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

const calls = (m: Chat): Call[] =>
  ((m.tool_calls as { id: string; function: { name: string; arguments: string } }[] | undefined) ?? []).map((c) => ({
    id: c.id,
    name: c.function.name,
    args: JSON.parse(c.function.arguments) as Record<string, unknown>,
  }));

const TURNS = CHAT_SESSION.filter((m) => m.role !== 'system');
const nameOf = new Map(TURNS.flatMap(calls).map((c) => [c.id, c.name]));

/** Anthropic Messages: tool_use blocks in assistant turns, tool_result blocks in user turns (ids toolu_…). */
function anthropic(): Chat[] {
  const toolu = (id: unknown) => String(id).replace('call_', 'toolu_');
  return TURNS.map((m) => {
    if (m.role === 'tool') {
      return { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolu(m.tool_call_id), content: m.content }] };
    }
    if (m.role === 'assistant' && m.tool_calls) {
      return {
        role: 'assistant',
        content: calls(m).map((c) => ({ type: 'tool_use', id: toolu(c.id), name: c.name, input: c.args })),
      };
    }
    return { role: m.role, content: m.content };
  });
}

/** OpenAI Responses input items: function_call and function_call_output items, assistant output_text messages. */
function responses(): Chat[] {
  return [
    { role: 'developer', content: SYSTEM_PROMPT },
    ...TURNS.flatMap((m): Chat[] => {
      if (m.role === 'tool') return [{ type: 'function_call_output', call_id: m.tool_call_id, output: m.content }];
      if (m.role === 'assistant' && m.tool_calls) {
        return calls(m).map((c) => ({
          type: 'function_call',
          call_id: c.id,
          name: c.name,
          arguments: JSON.stringify(c.args),
        }));
      }
      if (m.role === 'assistant') {
        return [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: m.content, annotations: [] }] }];
      }
      return [{ role: 'user', content: m.content }];
    }),
  ];
}

/** Gemini contents: functionCall parts in model turns, functionResponse parts in user turns. */
function gemini(): Chat[] {
  return TURNS.map((m) => {
    if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      return { role: 'user', parts: [{ functionResponse: { name: nameOf.get(id), response: { output: m.content } } }] };
    }
    if (m.role === 'assistant' && m.tool_calls) {
      return { role: 'model', parts: calls(m).map((c) => ({ functionCall: { name: c.name, args: c.args } })) };
    }
    return { role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] };
  });
}

/** The example session in every wire format, by format. */
export const HISTORIES = {
  'openai-chat': { format: 'openai-chat', model: 'gpt-4.1', messages: CHAT_SESSION, usage: CHAT_USAGE },
  anthropic: {
    format: 'anthropic',
    model: 'claude-sonnet-4-5',
    messages: anthropic(),
    system: SYSTEM_PROMPT,
    usage: {
      input_tokens: 14,
      cache_read_input_tokens: 1104,
      cache_creation_input_tokens: 187,
      output_tokens: 59,
      messages_covered: 12,
    },
  },
  'openai-responses': {
    format: 'openai-responses',
    model: 'gpt-5',
    messages: responses(),
    usage: { input_tokens: 1100, output_tokens: 49, total_tokens: 1149, messages_covered: 13 },
  },
  gemini: {
    format: 'gemini',
    model: 'gemini-2.5-pro',
    messages: gemini(),
    system: { parts: [{ text: SYSTEM_PROMPT }] },
    usage: { promptTokenCount: 1221, candidatesTokenCount: 54, totalTokenCount: 1275, messages_covered: 12 },
  },
} as const satisfies Record<string, SampleHistory>;
