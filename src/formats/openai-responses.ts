import type { CallSite, Countable, Fit, FormatAdapter, ParseResult, ResultSite } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Role, Violation, Warning } from '../history/types.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { orphanReasoning, reasoningTie } from './openai-responses-reasoning.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  CountableBuilder,
  carriesThoughtSignature,
  expectArray,
  expectRecord,
  expectString,
  isRecord,
  type JsonObject,
  lookup,
  malformed,
  parseArgs,
  plainSystemText,
  stringContent,
  typeName,
} from './shared.js';

/** Client-side calls: their outputs come back as items that name the same id. */
const CALLS: Record<string, { id: string; output: string }> = {
  function_call: { id: 'call_id', output: 'function_call_output' },
  custom_tool_call: { id: 'call_id', output: 'custom_tool_call_output' },
  computer_call: { id: 'call_id', output: 'computer_call_output' },
  local_shell_call: { id: 'call_id', output: 'local_shell_call_output' },
  shell_call: { id: 'call_id', output: 'shell_call_output' },
  apply_patch_call: { id: 'call_id', output: 'apply_patch_call_output' },
  mcp_approval_request: { id: 'id', output: 'mcp_approval_response' },
};
/** Outputs, and the field that names the call they answer. */
const OUTPUTS: Record<string, string> = {
  function_call_output: 'call_id',
  custom_tool_call_output: 'call_id',
  computer_call_output: 'call_id',
  local_shell_call_output: 'call_id',
  shell_call_output: 'call_id',
  apply_patch_call_output: 'call_id',
  mcp_approval_response: 'approval_request_id',
};
/** Outputs whose `output` may be a string: the ones compaction can replace with a placeholder. */
const TEXT_OUTPUTS = new Set([
  'function_call_output',
  'custom_tool_call_output',
  'local_shell_call_output',
  'apply_patch_call_output',
]);
/** Items the model produces within one response (besides assistant messages and client calls). */
const MODEL_ITEMS = new Set([
  'reasoning',
  'web_search_call',
  'file_search_call',
  'code_interpreter_call',
  'image_generation_call',
  'mcp_call',
  'mcp_list_tools',
  'tool_search_call',
  ...Object.keys(CALLS),
]);
/** Items kept as they are, never rewritten or summarized. */
const OPAQUE = new Set([
  'compaction',
  'item_reference',
  'compaction_trigger',
  'additional_tools',
  'tool_search_output',
  'program',
  'program_output',
]);
const KNOWN = new Set([...MODEL_ITEMS, ...Object.keys(OUTPUTS), ...OPAQUE, 'message']);
const PART_TYPES = new Set([
  'input_text',
  'input_image',
  'input_file',
  'input_audio',
  'output_text',
  'refusal',
  'summary_text',
  'reasoning_text',
]);
/** What Responses items carry: their keys and content part types (the other formats learn them). */
export const RESPONSES_SHAPES: Shapes = {
  keys: ['type', 'content', 'call_id', 'arguments', 'output', 'summary', 'encrypted_content', 'name'],
  types: [...PART_TYPES],
};
const MESSAGE_ROLES: Record<string, Role> = { user: 'user', assistant: 'assistant', system: 'system', developer: 'system' };

function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  const type = message.type;
  if (typeof type === 'string') return KNOWN.has(type) ? 'yes' : 'maybe';
  if (typeof message.role !== 'string' || lookup(MESSAGE_ROLES, message.role) === undefined) return 'no';
  if (typeof message.content === 'string') return 'maybe';
  if (!Array.isArray(message.content)) return 'no';
  let fit: Fit = 'maybe';
  for (const part of message.content) {
    if (!isRecord(part) || typeof part.type !== 'string' || foreign.types.has(part.type)) return 'no';
    if (PART_TYPES.has(part.type)) fit = 'yes';
  }
  return fit;
}

function itemType(m: JsonObject): string {
  return typeof m.type === 'string' ? m.type : 'message';
}

function checkMessage(m: JsonObject, path: string, foreign: Foreign): Role {
  const roleName = expectString(m.role, `${path}.role`);
  const role = lookup(MESSAGE_ROLES, roleName);
  if (!role) malformed(`${path}.role`, `must be user, assistant, system or developer, got ${JSON.stringify(roleName)}`);
  if (typeof m.content !== 'string') {
    expectArray(m.content, `${path}.content`).forEach((part, k) => {
      const type = expectString(expectRecord(part, `${path}.content[${k}]`).type, `${path}.content[${k}].type`);
      if (foreign.types.has(type))
        malformed(`${path}.content[${k}].type`, `${JSON.stringify(type)} is not a Responses content part`);
    });
  }
  return role;
}

function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const warnings: Warning[] = [];
  let previousModel = false;
  const items = messages.map((message, index): Item => {
    const path = `messages[${index}]`;
    const m = expectRecord(message, path);
    const type = itemType(m);
    if (m.type !== undefined && typeof m.type !== 'string')
      malformed(`${path}.type`, `must be a string, got ${typeName(m.type)}`);
    let role: Role = 'assistant';
    let calls: string[] = [];
    let results: string[] = [];
    let model = false;
    let opaque = false;
    const spec = lookup(CALLS, type);
    const answers = lookup(OUTPUTS, type);
    if (type === 'message') {
      role = checkMessage(m, path, foreign);
      model = role === 'assistant';
    } else if (spec) {
      calls = [expectString(m[spec.id], `${path}.${spec.id}`)];
      if (type === 'function_call') {
        expectString(m.name, `${path}.name`);
        expectString(m.arguments, `${path}.arguments`);
      }
      model = true;
    } else if (answers) {
      results = [expectString(m[answers], `${path}.${answers}`)];
      if (type === 'function_call_output' && typeof m.output !== 'string') expectArray(m.output, `${path}.output`);
      role = 'tool';
    } else if (type === 'reasoning') {
      expectArray(m.summary, `${path}.summary`);
      model = true;
    } else if (MODEL_ITEMS.has(type)) {
      model = true;
    } else {
      opaque = true;
      role = 'system';
      if (!OPAQUE.has(type)) {
        warnings.push({ code: 'unknown_item_type', message: `${path}: unknown item type ${JSON.stringify(type)} kept verbatim` });
      }
    }
    const joinsPrevious = model && previousModel;
    previousModel = model;
    return {
      index,
      role,
      userTurn: role === 'user',
      calls,
      results,
      thinking: type === 'reasoning',
      original: message,
      ...(joinsPrevious ? { joinsPrevious } : {}),
      ...(opaque ? { opaque } : {}),
    };
  });
  return { items, warnings };
}

function violations(items: readonly Item[]): Violation[] {
  return [...pairingViolations(items), ...orphanReasoning(items)].sort((a, b) => a.index - b.index);
}

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
