import type { Fit, ParseResult } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Role, Violation, Warning } from '../history/types.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  expectArray,
  expectOptionalString,
  expectRecord,
  expectString,
  isRecord,
  type JsonObject,
  lookup,
  malformed,
} from './shared.js';

const ROLES: Record<string, Role> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool',
  function: 'tool',
};

/** Content part types of Chat Completions, and whether each is distinctive of it. */
const PART_TYPES: Record<string, Fit> = {
  text: 'maybe',
  image_url: 'yes',
  input_audio: 'yes',
  file: 'yes',
  refusal: 'yes',
};

/** What Chat Completions messages carry: their keys and content part types (the other formats learn them). */
export const CHAT_SHAPES: Shapes = {
  keys: ['content', 'tool_calls', 'tool_call_id', 'function_call', 'name', 'refusal', 'audio', 'reasoning_content', 'reasoning'],
  types: Object.keys(PART_TYPES),
};

export function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  const role = message.role;
  if (typeof role !== 'string' || lookup(ROLES, role) === undefined) return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  let fit: Fit = role === 'user' || role === 'assistant' ? 'maybe' : 'yes';
  if ('tool_calls' in message || 'function_call' in message || 'tool_call_id' in message) fit = 'yes';
  if ('name' in message || 'refusal' in message || 'audio' in message) fit = 'yes';
  const content = message.content;
  if (content === null) fit = 'yes';
  if (Array.isArray(content)) {
    for (const part of content) {
      if (!isRecord(part) || typeof part.type !== 'string') return 'no';
      if (foreign.types.has(part.type)) return 'no';
      if (lookup(PART_TYPES, part.type) === 'yes') fit = 'yes';
    }
  }
  return fit;
}

/** Where content parts are read: the message's path, the warnings, and whether an unknown type was met. */
interface PartScan {
  readonly warnings: Warning[];
  readonly foreign: Foreign;
  unknown: boolean;
}

/** A part of a type Chat Completions does not define (nor another format): kept verbatim, with a warning. */
function unknownPart(type: string, at: string, scan: PartScan): void {
  if (scan.foreign.types.has(type)) malformed(`${at}.type`, `part type ${JSON.stringify(type)} is not a Chat Completions part`);
  scan.unknown = true;
  scan.warnings.push({ code: 'unknown_part_type', message: `${at}: unknown part type ${JSON.stringify(type)} kept verbatim` });
}

/** Text parts (and refusals, for an assistant); a known part of another role is a 400, an unknown one a warning. */
function checkTextParts(content: unknown, path: string, allowRefusal: boolean, scan: PartScan): void {
  if (typeof content === 'string') return;
  const parts = expectArray(content, path);
  parts.forEach((part, k) => {
    const at = `${path}[${k}]`;
    const p = expectRecord(part, at);
    const type = expectString(p.type, `${at}.type`);
    if (type === 'text') expectString(p.text, `${at}.text`);
    else if (type === 'refusal' && allowRefusal) expectString(p.refusal, `${at}.refusal`);
    else if (lookup(PART_TYPES, type) !== undefined)
      malformed(`${at}.type`, `part type ${JSON.stringify(type)} is not allowed in this message`);
    else unknownPart(type, at, scan);
  });
}

function checkUserParts(content: unknown, path: string, scan: PartScan): void {
  if (typeof content === 'string') return;
  const parts = expectArray(content, path);
  parts.forEach((part, k) => {
    const at = `${path}[${k}]`;
    const p = expectRecord(part, at);
    const type = expectString(p.type, `${at}.type`);
    if (type === 'text') expectString(p.text, `${at}.text`);
    else if (type === 'image_url') expectString(expectRecord(p.image_url, `${at}.image_url`).url, `${at}.image_url.url`);
    else if (type === 'input_audio') expectRecord(p.input_audio, `${at}.input_audio`);
    else if (type === 'file') expectRecord(p.file, `${at}.file`);
    else if (type === 'refusal') malformed(`${at}.type`, 'part type "refusal" is not allowed in this message');
    else unknownPart(type, at, scan);
  });
}

function parseToolCalls(value: unknown, path: string): string[] {
  const calls = expectArray(value, path);
  return calls.map((call, k) => {
    const at = `${path}[${k}]`;
    const c = expectRecord(call, at);
    const id = expectString(c.id, `${at}.id`);
    const type = c.type ?? 'function';
    if (type === 'function') {
      const fn = expectRecord(c.function, `${at}.function`);
      expectString(fn.name, `${at}.function.name`);
      expectString(fn.arguments, `${at}.function.arguments`);
    } else if (type === 'custom') {
      const custom = expectRecord(c.custom, `${at}.custom`);
      expectString(custom.name, `${at}.custom.name`);
      expectString(custom.input, `${at}.custom.input`);
    } else {
      malformed(`${at}.type`, `must be "function" or "custom", got ${JSON.stringify(type)}`);
    }
    return id;
  });
}

/** The ids of a `tool_calls` array of well-formed function calls; undefined where `parseToolCalls` must look. */
function plainCallIds(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const ids: string[] = [];
  for (const c of value) {
    if (!isRecord(c) || typeof c.id !== 'string' || (c.type !== undefined && c.type !== 'function')) return undefined;
    const fn = c.function;
    if (!isRecord(fn) || typeof fn.name !== 'string' || typeof fn.arguments !== 'string') return undefined;
    ids.push(c.id);
  }
  return ids;
}

/**
 * The calls and results of a message of the plain shape most are (text content, function calls),
 * checked without building the field paths an error would name; undefined for any other shape,
 * which the checked path reads (and refuses, naming the field, where it is wrong).
 */
function plainPairs(m: JsonObject): Read | undefined {
  if (m.name !== undefined && typeof m.name !== 'string') return undefined;
  const text = typeof m.content === 'string';
  switch (m.role) {
    case 'system':
    case 'developer':
    case 'user':
      return text ? { calls: [], results: [] } : undefined;
    case 'tool':
      return text && typeof m.tool_call_id === 'string' ? { calls: [], results: [m.tool_call_id] } : undefined;
    case 'assistant': {
      if (!text && m.content !== null && m.content !== undefined) return undefined;
      if (m.function_call !== undefined && m.function_call !== null) return undefined;
      const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : plainCallIds(m.tool_calls);
      return calls && { calls, results: [] };
    }
    default:
      return undefined;
  }
}

/** What reading one message finds: its pairing ids, and whether it holds a part of an unknown type. */
interface Read {
  readonly calls: string[];
  readonly results: string[];
  readonly unknown?: boolean;
}

/** Where the checked path reads: the warnings, the other formats' shapes, the last legacy function call. */
interface CheckState {
  readonly warnings: Warning[];
  readonly foreign: Foreign;
  lastFunctionCall: number;
}

/** One message checked field by field: a field that is wrong is refused, named by its path. */
function checkMessage(message: unknown, index: number, state: CheckState): Read {
  const scan: PartScan = { warnings: state.warnings, foreign: state.foreign, unknown: false };
  const path = `messages[${index}]`;
  const m = expectRecord(message, path);
  const roleName = expectString(m.role, `${path}.role`);
  if (!lookup(ROLES, roleName))
    malformed(`${path}.role`, `unknown role ${JSON.stringify(roleName)} (expected one of ${Object.keys(ROLES).join(', ')})`);
  expectOptionalString(m.name, `${path}.name`);
  let calls: string[] = [];
  let results: string[] = [];
  switch (roleName) {
    case 'system':
    case 'developer':
      checkTextParts(m.content, `${path}.content`, false, scan);
      break;
    case 'user':
      checkUserParts(m.content, `${path}.content`, scan);
      break;
    case 'assistant':
      if (m.content !== null && m.content !== undefined) checkTextParts(m.content, `${path}.content`, true, scan);
      if (m.tool_calls !== undefined && m.tool_calls !== null) calls = parseToolCalls(m.tool_calls, `${path}.tool_calls`);
      if (m.function_call !== undefined && m.function_call !== null) {
        const fn = expectRecord(m.function_call, `${path}.function_call`);
        expectString(fn.name, `${path}.function_call.name`);
        expectString(fn.arguments, `${path}.function_call.arguments`);
        calls = [...calls, `function_call@${index}`];
        state.lastFunctionCall = index;
      }
      break;
    case 'tool':
      results = [expectString(m.tool_call_id, `${path}.tool_call_id`)];
      checkTextParts(m.content, `${path}.content`, false, scan);
      break;
    default:
      expectString(m.name, `${path}.name`);
      if (m.content !== null) expectString(m.content, `${path}.content`);
      results = [`function_call@${state.lastFunctionCall >= 0 ? state.lastFunctionCall : 'none'}`];
  }
  return { calls, results, unknown: scan.unknown };
}

export function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const state: CheckState = { warnings: [], foreign, lastFunctionCall: -1 };
  let past = false;
  const items = messages.map((message, index): Item => {
    // Most messages are of the plain shape, read without building the paths an error would name.
    const read = (isRecord(message) && plainPairs(message)) || checkMessage(message, index, state);
    const m = message as JsonObject;
    const role = ROLES[m.role as string] as Role;
    const thinking = typeof m.reasoning_content === 'string' || typeof m.reasoning === 'string';
    // A system or developer message after the conversation started is an instruction, pinned in place.
    const pinned = past && role === 'system';
    if (role !== 'system') past = true;
    const item: { -readonly [K in keyof Item]: Item[K] } = {
      index,
      role,
      userTurn: role === 'user',
      calls: read.calls,
      results: read.results,
      thinking,
      original: message,
    };
    // Set only where true (spreading optional keys in made each item a slow, large object).
    if (pinned) item.pinned = true;
    if (read.unknown) item.sticky = true;
    return item;
  });
  return { items, warnings: state.warnings };
}

export function violations(items: readonly Item[]): Violation[] {
  const out = pairingViolations(items);
  for (const item of items) {
    const m = item.original as JsonObject;
    if (item.role !== 'assistant') continue;
    const empty = (m.content === null || m.content === undefined || m.content === '') && item.calls.length === 0;
    if (empty && typeof m.refusal !== 'string' && !isRecord(m.audio)) {
      out.push({ index: item.index, rule: 'empty_assistant', message: 'an assistant message needs content or tool calls' });
    }
  }
  return out.sort((a, b) => a.index - b.index);
}
