import type { Fit, ParseResult } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Role, Violation, Warning } from '../history/types.js';
import { orphanReasoning } from './openai-responses-reasoning.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import { expectArray, expectRecord, expectString, isRecord, type JsonObject, lookup, malformed, typeName } from './shared.js';

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
export const OUTPUTS: Record<string, string> = {
  function_call_output: 'call_id',
  custom_tool_call_output: 'call_id',
  computer_call_output: 'call_id',
  local_shell_call_output: 'call_id',
  shell_call_output: 'call_id',
  apply_patch_call_output: 'call_id',
  mcp_approval_response: 'approval_request_id',
};
/** Outputs whose `output` may be a string: the ones compaction can replace with a placeholder. */
export const TEXT_OUTPUTS = new Set([
  'function_call_output',
  'custom_tool_call_output',
  'local_shell_call_output',
  'apply_patch_call_output',
]);
/** Items the model produces within one response (besides assistant messages and client calls). */
export const MODEL_ITEMS = new Set([
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
export const OPAQUE = new Set([
  'compaction',
  'item_reference',
  'compaction_trigger',
  'additional_tools',
  'configuration_update',
  'tool_search_output',
  'program',
  'program_output',
]);
/**
 * Items that change what holds from their place on (the tools offered, the reasoning and text
 * settings): instructions like a developer message, pinned where they stand after the head.
 */
const INSTRUCTIONS = new Set(['additional_tools', 'configuration_update']);
export const KNOWN = new Set([...MODEL_ITEMS, ...Object.keys(OUTPUTS), ...OPAQUE, 'message']);
export const PART_TYPES = new Set([
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

export function classify(message: unknown, foreign: Foreign): Fit {
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

export function itemType(m: JsonObject): string {
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

export function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const warnings: Warning[] = [];
  let previousModel = false;
  let past = false;
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
    let sticky = false;
    const spec = lookup(CALLS, type);
    const answers = lookup(OUTPUTS, type);
    const search = clientToolSearch(m, type);
    if (type === 'message') {
      role = checkMessage(m, path, foreign);
      model = role === 'assistant';
    } else if (search === 'call') {
      calls = [m.call_id as string];
      model = true;
    } else if (search === 'output') {
      results = [m.call_id as string];
      role = 'tool';
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
    } else if (OPAQUE.has(type)) {
      opaque = true;
      role = 'system';
    } else {
      // A type newer than this release: it goes or stays with its neighbours, whatever it pairs with.
      role = 'system';
      sticky = true;
      warnings.push({ code: 'unknown_item_type', message: `${path}: unknown item type ${JSON.stringify(type)} kept verbatim` });
    }
    const pinned = past && role === 'system' && (type === 'message' || INSTRUCTIONS.has(type));
    if (role !== 'system') past = true;
    const joinsPrevious = model && previousModel;
    previousModel = model;
    const item: { -readonly [K in keyof Item]: Item[K] } = {
      index,
      role,
      userTurn: role === 'user',
      calls,
      results,
      thinking: type === 'reasoning',
      original: message,
    };
    // Set only where true (spreading optional keys in makes each item a slow, large object).
    if (joinsPrevious) item.joinsPrevious = true;
    if (opaque) item.opaque = true;
    if (pinned) item.pinned = true;
    if (sticky) item.sticky = true;
    return item;
  });
  return { items, warnings };
}

/**
 * A tool search the client runs (`execution: "client"`): its `tool_search_output` answers the
 * `tool_search_call` with the same `call_id`, as a function call's output does. A search the
 * server ran is part of the model's response (the call) and kept as it came (the output).
 */
function clientToolSearch(m: JsonObject, type: string): 'call' | 'output' | undefined {
  if (m.execution !== 'client' || typeof m.call_id !== 'string') return undefined;
  if (type === 'tool_search_call') return 'call';
  return type === 'tool_search_output' ? 'output' : undefined;
}

export function violations(items: readonly Item[]): Violation[] {
  return [...pairingViolations(items), ...orphanReasoning(items)].sort((a, b) => a.index - b.index);
}
