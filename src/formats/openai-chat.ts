import type { CallSite, Countable, Fit, FormatAdapter, ParseResult, ResultSite, UnitKind } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Role, Violation, Warning } from '../history/types.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  CountableBuilder,
  carriesThoughtSignature,
  expectArray,
  expectOptionalString,
  expectRecord,
  expectString,
  isRecord,
  type JsonObject,
  lookup,
  malformed,
  parseArgs,
  plainSystemText,
  stringContent,
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

function classify(message: unknown, foreign: Foreign): Fit {
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

function checkTextParts(content: unknown, path: string, allowRefusal: boolean): void {
  if (typeof content === 'string') return;
  const parts = expectArray(content, path);
  parts.forEach((part, k) => {
    const p = expectRecord(part, `${path}[${k}]`);
    const type = expectString(p.type, `${path}[${k}].type`);
    if (type === 'text') expectString(p.text, `${path}[${k}].text`);
    else if (type === 'refusal' && allowRefusal) expectString(p.refusal, `${path}[${k}].refusal`);
    else malformed(`${path}[${k}].type`, `part type ${JSON.stringify(type)} is not allowed in this message`);
  });
}

function checkUserParts(content: unknown, path: string, warnings: Warning[], foreign: Foreign): void {
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
    else if (foreign.types.has(type)) malformed(`${at}.type`, `part type ${JSON.stringify(type)} is not a Chat Completions part`);
    else warnings.push({ code: 'unknown_part_type', message: `${at}: unknown part type ${JSON.stringify(type)} kept verbatim` });
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

function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const warnings: Warning[] = [];
  let lastFunctionCall = -1;
  const items = messages.map((message, index): Item => {
    const path = `messages[${index}]`;
    const m = expectRecord(message, path);
    const roleName = expectString(m.role, `${path}.role`);
    const role = lookup(ROLES, roleName);
    if (!role)
      malformed(`${path}.role`, `unknown role ${JSON.stringify(roleName)} (expected one of ${Object.keys(ROLES).join(', ')})`);
    expectOptionalString(m.name, `${path}.name`);
    let calls: string[] = [];
    let results: string[] = [];
    switch (roleName) {
      case 'system':
      case 'developer':
        checkTextParts(m.content, `${path}.content`, false);
        break;
      case 'user':
        checkUserParts(m.content, `${path}.content`, warnings, foreign);
        break;
      case 'assistant':
        if (m.content !== null && m.content !== undefined) checkTextParts(m.content, `${path}.content`, true);
        if (m.tool_calls !== undefined && m.tool_calls !== null) calls = parseToolCalls(m.tool_calls, `${path}.tool_calls`);
        if (m.function_call !== undefined && m.function_call !== null) {
          const fn = expectRecord(m.function_call, `${path}.function_call`);
          expectString(fn.name, `${path}.function_call.name`);
          expectString(fn.arguments, `${path}.function_call.arguments`);
          calls = [...calls, `function_call@${index}`];
          lastFunctionCall = index;
        }
        break;
      case 'tool':
        results = [expectString(m.tool_call_id, `${path}.tool_call_id`)];
        checkTextParts(m.content, `${path}.content`, false);
        break;
      default:
        expectString(m.name, `${path}.name`);
        if (m.content !== null) expectString(m.content, `${path}.content`);
        results = [`function_call@${lastFunctionCall >= 0 ? lastFunctionCall : 'none'}`];
    }
    const thinking = typeof m.reasoning_content === 'string' || typeof m.reasoning === 'string';
    return { index, role, userTurn: role === 'user', calls, results, thinking, original: message };
  });
  return { items, warnings };
}

function violations(items: readonly Item[]): Violation[] {
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

function countable(message: unknown): Countable {
  const m = message as JsonObject;
  const out = new CountableBuilder();
  out.text(m.name).text(m.refusal).text(m.reasoning_content).text(m.reasoning);
  const content = m.content;
  if (typeof content === 'string') out.text(content);
  else if (Array.isArray(content)) {
    for (const part of content as JsonObject[]) {
      if (part.type === 'text') out.text(part.text);
      else if (part.type === 'refusal') out.text(part.refusal);
      else if (part.type === 'image_url') out.images++;
      else if (part.type === 'input_audio') out.audio++;
      else if (part.type === 'file') out.documents++;
      else out.json(part);
    }
  }
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls as JsonObject[]) {
      const fn = (call.function ?? call.custom) as JsonObject | undefined;
      out.text(fn?.name).text(fn?.arguments).text(fn?.input);
    }
  }
  if (isRecord(m.function_call)) out.text(m.function_call.name).text(m.function_call.arguments);
  return out.build();
}

function callSites(message: unknown): CallSite[] {
  const calls = (message as JsonObject).tool_calls;
  if (!Array.isArray(calls)) return [];
  return (calls as JsonObject[]).map((call, slot) => {
    const fn = isRecord(call.function) ? call.function : undefined;
    const custom = isRecord(call.custom) ? call.custom : undefined;
    return {
      id: call.id as string,
      name: String(fn?.name ?? custom?.name ?? ''),
      args: fn ? parseArgs(fn.arguments) : undefined,
      slot,
    };
  });
}

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as JsonObject[])
    .map((part) => (part.type === 'text' ? String(part.text) : `[${String(part.type)}]`))
    .join('\n');
}

function resultSites(message: unknown): ResultSite[] {
  const m = message as JsonObject;
  if (m.role !== 'tool' || typeof m.tool_call_id !== 'string') return [];
  return [{ callId: m.tool_call_id, slot: -1, text: partsText(m.content) }];
}

function unitAt(message: unknown, kind: UnitKind, slot: number): unknown {
  if (kind === 'result') return message;
  return ((message as JsonObject).tool_calls as unknown[])[slot];
}

function replaceUnit(message: unknown, kind: UnitKind, slot: number, unit: unknown): unknown {
  if (kind === 'result') return unit;
  const m = message as JsonObject;
  const calls = [...(m.tool_calls as unknown[])];
  calls[slot] = unit;
  return { ...m, tool_calls: calls };
}

function callWithArgs(unit: unknown, args: Record<string, unknown>): unknown {
  const call = unit as JsonObject;
  return { ...call, function: { ...(call.function as JsonObject), arguments: JSON.stringify(args) } };
}

function withoutThinking(message: unknown): unknown | undefined {
  const m = message as JsonObject;
  if (!('reasoning_content' in m) && !('reasoning' in m)) return undefined;
  const { reasoning_content: _content, reasoning: _reasoning, ...rest } = m;
  return rest;
}

/**
 * OpenAI Chat Completions `messages`: system/developer, user (text, image, audio and file parts),
 * assistant (text and refusal parts, `tool_calls` of function and custom tools, legacy
 * `function_call`, and the non-standard `reasoning_content` that some servers add), tool and
 * legacy function results. Framing costs follow OpenAI's published counting recipe (3 tokens per
 * message, 3 to prime the reply); an image of unknown size is counted as one 1024x1024
 * high-detail image (765 tokens).
 */
export const openaiChat = (foreign: Foreign): FormatAdapter => ({
  name: 'openai-chat',
  classify: (message) => classify(message, foreign),
  parse: (messages) => parse(messages, foreign),
  violations,
  canFollow: () => true,
  countable,
  systemText: plainSystemText,
  callSites,
  resultSites,
  unitAt,
  replaceUnit,
  resultWithText: (unit, text) => ({ ...(unit as JsonObject), content: text }),
  callWithArgs,
  withoutThinking,
  textMessage: (role, text) => ({ role, content: text }),
  systemMessages: true,
  summaryExchange: (id, text, { reasoning }) => [
    {
      role: 'assistant',
      content: null,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      tool_calls: [{ id, type: 'function', function: { name: SUMMARY_TOOL, arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: id, content: text },
  ],
  prose: (message) => {
    const m = message as JsonObject;
    // A tool or function message's content is tool traffic (its result), not prose.
    if (m.role === 'tool' || m.role === 'function') return '';
    const content = m.content;
    const parts = Array.isArray(content)
      ? (content as JsonObject[]).map((p) =>
          typeof p.text === 'string' ? p.text : typeof p.refusal === 'string' ? p.refusal : '',
        )
      : [typeof content === 'string' ? content : ''];
    if (typeof m.refusal === 'string') parts.push(m.refusal);
    return parts.filter(Boolean).join('\n');
  },
  appendText: (message, text) => {
    const m = message as JsonObject;
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
    return { ...m, content: [...parts, { type: 'text', text }] };
  },
  lastText: (message) => {
    const content = (message as JsonObject).content;
    const last = Array.isArray(content) ? (content[content.length - 1] as JsonObject | undefined) : undefined;
    return last?.type === 'text' && typeof last.text === 'string' ? last.text : undefined;
  },
  dropLastText: (message, collapse) => {
    const m = message as JsonObject;
    const rest = (m.content as unknown[]).slice(0, -1) as JsonObject[];
    const single = rest.length === 1 && rest[0]?.type === 'text';
    return { ...m, content: collapse && single ? rest[0]?.text : rest };
  },
  hasStringContent: stringContent,
  hasSignature: carriesThoughtSignature,
  reasoningText: (message) => {
    const r = (message as JsonObject).reasoning_content;
    return typeof r === 'string' && r !== '' ? r : undefined;
  },
  framing: { perMessage: 3, perRequest: 3 },
  media: { image: 765, document: 1500, audio: 500 },
});
