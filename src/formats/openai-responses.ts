import type { CallSite, Countable, FormatAdapter, ResultSite } from '../history/format.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { classify, itemType, OUTPUTS, parse, TEXT_OUTPUTS, violations } from './openai-responses-parse.js';
import { reasoningTie } from './openai-responses-reasoning.js';
import type { Foreign } from './shapes.js';
import {
  CountableBuilder,
  carriesThoughtSignature,
  type JsonObject,
  lookup,
  parseArgs,
  plainSystemText,
  stringContent,
} from './shared.js';

function addParts(out: CountableBuilder, parts: unknown): void {
  if (typeof parts === 'string') {
    out.text(parts);
    return;
  }
  if (!Array.isArray(parts)) return;
  for (const part of parts as JsonObject[]) {
    if (typeof part.text === 'string') out.text(part.text);
    else if (typeof part.refusal === 'string') out.text(part.refusal);
    else if (part.type === 'input_image') out.images++;
    else if (part.type === 'input_file') out.documents++;
    else if (part.type === 'input_audio') out.audio++;
    else out.json(part);
  }
}

function countable(message: unknown): Countable {
  const m = message as JsonObject;
  const out = new CountableBuilder();
  const type = itemType(m);
  if (type === 'message') addParts(out, m.content);
  else if (type === 'reasoning') {
    addParts(out, m.summary);
    addParts(out, m.content);
    out.text(m.encrypted_content);
  } else if (type === 'function_call') out.text(m.name).text(m.arguments);
  else if (type === 'custom_tool_call') out.text(m.name).text(m.input);
  else if (lookup(OUTPUTS, type) !== undefined) addParts(out, m.output);
  else out.json(m);
  return out.build();
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return '';
  return (output as JsonObject[]).map((p) => (typeof p.text === 'string' ? p.text : `[${String(p.type)}]`)).join('\n');
}

function callSites(message: unknown): CallSite[] {
  const m = message as JsonObject;
  if (m.type === 'function_call') {
    return [{ id: m.call_id as string, name: m.name as string, args: parseArgs(m.arguments), slot: -1 }];
  }
  if (m.type === 'custom_tool_call') return [{ id: m.call_id as string, name: m.name as string, args: undefined, slot: -1 }];
  return [];
}

function resultSites(message: unknown): ResultSite[] {
  const m = message as JsonObject;
  if (!TEXT_OUTPUTS.has(m.type as string) || typeof m.call_id !== 'string') return [];
  return [{ callId: m.call_id, slot: -1, text: outputText(m.output) }];
}

/**
 * OpenAI Responses `input` items: messages (easy and typed, with input and output content
 * parts), function and custom tool calls and their outputs (paired by `call_id`), reasoning items
 * (summaries and `encrypted_content` kept opaque), computer, shell, local shell and apply-patch
 * calls and outputs, built-in tool calls (web search, file search, code interpreter, image
 * generation, MCP), MCP approval requests and responses, and OpenAI's own `compaction` items
 * (kept verbatim, never rewritten or summarized). The items of one model response (reasoning,
 * message, calls) form one unit: a reasoning item is never separated from what follows it. Item
 * ids are kept as they came. Counted with the model's tokenizer and Chat's framing costs.
 */
export const openaiResponses = (foreign: Foreign): FormatAdapter => ({
  name: 'openai-responses',
  classify: (message) => classify(message, foreign),
  parse: (messages) => parse(messages, foreign),
  violations,
  canFollow: () => true,
  countable,
  systemText: plainSystemText,
  callSites,
  resultSites,
  unitAt: (message) => message,
  replaceUnit: (_message, _kind, _slot, unit) => unit,
  resultWithText: (unit, text) => ({ ...(unit as JsonObject), output: text }),
  callWithArgs: (unit, args) => ({ ...(unit as JsonObject), arguments: JSON.stringify(args) }),
  withoutThinking: (message) => (itemType(message as JsonObject) === 'reasoning' ? null : undefined),
  reasoningTie,
  textMessage: (role, text) => ({ type: 'message', role, content: text }),
  systemMessages: true,
  summaryExchange: (id, text) => [
    { type: 'function_call', call_id: id, name: SUMMARY_TOOL, arguments: '{}' },
    { type: 'function_call_output', call_id: id, output: text },
  ],
  prose: (message) => {
    const m = message as JsonObject;
    if (itemType(m) !== 'message') return '';
    if (typeof m.content === 'string') return m.content;
    return (m.content as JsonObject[])
      .map((p) => (typeof p.text === 'string' ? p.text : typeof p.refusal === 'string' ? p.refusal : ''))
      .filter(Boolean)
      .join('\n');
  },
  appendText: (message, text) => {
    const m = message as JsonObject;
    const kind = m.role === 'assistant' ? 'output_text' : 'input_text';
    const parts = typeof m.content === 'string' ? [{ type: kind, text: m.content }] : (m.content as unknown[]);
    return { ...m, content: [...parts, { type: kind, text, ...(kind === 'output_text' ? { annotations: [] } : {}) }] };
  },
  lastText: (message) => {
    const content = (message as JsonObject).content;
    const last = Array.isArray(content) ? (content[content.length - 1] as JsonObject | undefined) : undefined;
    return typeof last?.text === 'string' ? last.text : undefined;
  },
  dropLastText: (message, collapse) => {
    const m = message as JsonObject;
    const rest = (m.content as JsonObject[]).slice(0, -1);
    return { ...m, content: collapse && rest.length === 1 && typeof rest[0]?.text === 'string' ? rest[0].text : rest };
  },
  hasStringContent: stringContent,
  hasSignature: carriesThoughtSignature,
  reasoningText: () => undefined,
  framing: { perMessage: 3, perRequest: 3 },
  media: { image: 765, document: 1500, audio: 500 },
});
