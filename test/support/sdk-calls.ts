import Anthropic from '@anthropic-ai/sdk';
import { type GenerateContentParameters, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';

/**
 * The official SDKs, configured as an agent configures them for the proxy (a base URL, explicit
 * timeouts, no retries: a retry would hide what the first answer was), and one small agent turn
 * in each provider's shape: a task, a shell tool, one tool round already in the history.
 */

/** The SDKs' base URLs: straight to a provider's root, or through a Compactor's prefixes. */
export interface Roots {
  readonly anthropic: string;
  readonly openai: string;
  readonly gemini: string;
}

/** A provider (the fake's root URL) as the SDKs reach it directly. */
export const direct = (url: string): Roots => ({ anthropic: url, openai: `${url}/v1`, gemini: url });

/** A Compactor as the SDKs reach it: one base URL per provider. */
export const proxied = (url: string): Roots => ({
  anthropic: `${url}/anthropic`,
  openai: `${url}/openai/v1`,
  gemini: `${url}/gemini`,
});

/** The SDKs' own request timeout here: far past any answer of the fake's, short of the test's. */
export const SDK_TIMEOUT_MS = 60_000;

/** What each SDK is built with: where it goes, and the `fetch` it goes with. */
export interface Client {
  readonly roots: Roots;
  readonly fetch?: typeof fetch;
}

export function anthropic(c: Client): Anthropic {
  return new Anthropic({
    apiKey: 'sk-ant-test-key',
    baseURL: c.roots.anthropic,
    timeout: SDK_TIMEOUT_MS,
    maxRetries: 0,
    ...(c.fetch ? { fetch: c.fetch } : {}),
  });
}

export function openai(c: Client): OpenAI {
  return new OpenAI({
    apiKey: 'sk-test-key',
    baseURL: c.roots.openai,
    timeout: SDK_TIMEOUT_MS,
    maxRetries: 0,
    ...(c.fetch ? { fetch: c.fetch } : {}),
  });
}

export function gemini(c: Client): GoogleGenAI {
  return new GoogleGenAI({
    apiKey: 'AIza-test-key',
    httpOptions: {
      baseUrl: c.roots.gemini,
      timeout: SDK_TIMEOUT_MS,
      // One attempt: the genai SDK retries only when given retry options.
      retryOptions: { attempts: 1 },
      ...(c.fetch ? { fetch: c.fetch } : {}),
    },
  });
}

const TASK = 'Count the lines of the two logs, then say which is longer.';
const COMMAND = 'wc -l a.log b.log';
const OUTPUT = '  12 a.log\n  30 b.log\n  42 total';
const SCHEMA = { type: 'object' as const, properties: { command: { type: 'string' } }, required: ['command'] };

/** A Messages request: system, a `Bash` tool, a tool round. */
export const anthropicTurn: Anthropic.MessageCreateParamsNonStreaming = {
  model: 'claude-sonnet-4-5',
  max_tokens: 4096,
  system: 'You are a careful coding agent.',
  tools: [{ name: 'Bash', description: 'Run a shell command', input_schema: SCHEMA }],
  messages: [
    { role: 'user', content: TASK },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: COMMAND } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: OUTPUT }] },
  ],
};

/** A Responses request: instructions, a `shell` function, a function call and its output. */
export const responsesTurn: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
  model: 'gpt-5',
  instructions: 'You are a careful coding agent.',
  tools: [{ type: 'function', name: 'shell', description: 'Run a shell command', parameters: SCHEMA, strict: false }],
  input: [
    { type: 'message', role: 'user', content: TASK },
    { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: JSON.stringify({ command: COMMAND }) },
    { type: 'function_call_output', call_id: 'call_1', output: OUTPUT },
  ],
};

/** A Chat Completions request: a system message, a `bash` function, a tool call and its result. */
export const chatTurn: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = {
  model: 'gpt-4.1',
  tools: [{ type: 'function', function: { name: 'bash', description: 'Run a shell command', parameters: SCHEMA } }],
  messages: [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: TASK },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: COMMAND }) } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: OUTPUT },
  ],
};

/** A generateContent request: a system instruction, a `run_shell_command` declaration, a function round. */
export const geminiTurn: GenerateContentParameters = {
  model: 'gemini-2.5-flash',
  contents: [
    { role: 'user', parts: [{ text: TASK }] },
    { role: 'model', parts: [{ functionCall: { name: 'run_shell_command', args: { command: COMMAND } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'run_shell_command', response: { output: OUTPUT } } }] },
  ],
  config: {
    systemInstruction: 'You are a careful coding agent.',
    tools: [
      {
        functionDeclarations: [{ name: 'run_shell_command', description: 'Run a shell command', parametersJsonSchema: SCHEMA }],
      },
    ],
  },
};
