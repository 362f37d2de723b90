import type { Fit, ParseResult } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Violation, Warning } from '../history/types.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  alternates,
  expectArray,
  expectRecord,
  expectString,
  isEmptyContent,
  isRecord,
  type JsonObject,
  malformed,
} from './shared.js';

/** Results of server-side tools: they answer a `server_tool_use` in the same assistant message. */
export const SERVER_RESULTS = new Set([
  'web_search_tool_result',
  'web_fetch_tool_result',
  'advisor_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_result',
]);
export const SERVER_CALLS = new Set(['server_tool_use', 'mcp_tool_use']);
export const ASSISTANT_ONLY = new Set(['tool_use', 'thinking', 'redacted_thinking', ...SERVER_CALLS, ...SERVER_RESULTS]);
export const USER_ONLY = new Set(['tool_result']);
/**
 * Every block type of the Messages API (`@anthropic-ai/sdk` 1.16, beta namespace included):
 * server-side `compaction` summaries, the tool changes of mid-conversation system messages, MCP
 * tool listings, model fallback records. None of these pairs with another message, and none may
 * be cleared (only a client `tool_result` takes a placeholder).
 */
export const KNOWN = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'container_upload',
  'tool_reference',
  'compaction',
  'tool_addition',
  'tool_removal',
  'mcp_tool_listing',
  'fallback',
  ...ASSISTANT_ONLY,
  ...USER_ONLY,
]);
/** What Anthropic messages carry: their keys and block types (the other formats learn them). */
export const ANTHROPIC_SHAPES: Shapes = { keys: ['content'], types: [...KNOWN] };

/** The roles of Messages `messages`: turns, and mid-conversation system messages. */
const ROLES = new Set(['user', 'assistant', 'system']);

export function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  if (typeof message.role !== 'string' || !ROLES.has(message.role)) return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  const content = message.content;
  if (typeof content === 'string' || (content === undefined && message.role === 'system')) return 'maybe';
  if (!Array.isArray(content)) return 'no';
  let fit: Fit = 'maybe';
  for (const block of content) {
    if (!isRecord(block) || typeof block.type !== 'string') return 'no';
    if (foreign.types.has(block.type)) return 'no';
    if (block.type !== 'text' && KNOWN.has(block.type)) fit = 'yes';
  }
  return fit;
}

export interface BlockScan {
  calls: string[];
  results: string[];
  thinking: boolean;
  /** A block of a type the service does not know. */
  unknown: boolean;
}

export function checkBlock(
  block: JsonObject,
  at: string,
  role: string,
  scan: BlockScan,
  warnings: Warning[],
  foreign: Foreign,
): void {
  const type = expectString(block.type, `${at}.type`);
  if (role === 'user' && ASSISTANT_ONLY.has(type)) malformed(`${at}.type`, `a ${type} block belongs in an assistant message`);
  if (role === 'assistant' && USER_ONLY.has(type)) malformed(`${at}.type`, `a ${type} block belongs in a user message`);
  if (role === 'system' && (ASSISTANT_ONLY.has(type) || USER_ONLY.has(type)))
    malformed(`${at}.type`, `a ${type} block does not belong in a system message (text and tool changes do)`);
  switch (type) {
    case 'text':
      expectString(block.text, `${at}.text`);
      return;
    case 'image':
    case 'document':
      expectRecord(block.source, `${at}.source`);
      return;
    case 'thinking':
      expectString(block.thinking, `${at}.thinking`);
      expectString(block.signature, `${at}.signature`);
      scan.thinking = true;
      return;
    case 'redacted_thinking':
      expectString(block.data, `${at}.data`);
      scan.thinking = true;
      return;
    case 'tool_use':
      scan.calls.push(expectString(block.id, `${at}.id`));
      expectString(block.name, `${at}.name`);
      expectRecord(block.input, `${at}.input`);
      return;
    case 'tool_result':
      scan.results.push(expectString(block.tool_use_id, `${at}.tool_use_id`));
      if (block.content !== undefined && typeof block.content !== 'string') {
        expectArray(block.content, `${at}.content`).forEach((inner, k) => {
          expectString(expectRecord(inner, `${at}.content[${k}]`).type, `${at}.content[${k}].type`);
        });
      }
      if (block.is_error !== undefined && typeof block.is_error !== 'boolean') malformed(`${at}.is_error`, 'must be a boolean');
      return;
    default:
      if (SERVER_CALLS.has(type)) {
        expectString(block.id, `${at}.id`);
        expectString(block.name, `${at}.name`);
      } else if (SERVER_RESULTS.has(type)) {
        expectString(block.tool_use_id, `${at}.tool_use_id`);
      } else if (!KNOWN.has(type)) {
        if (foreign.types.has(type)) malformed(`${at}.type`, `block type ${JSON.stringify(type)} is not an Anthropic block`);
        scan.unknown = true;
        warnings.push({ code: 'unknown_block_type', message: `${at}: unknown block type ${JSON.stringify(type)} kept verbatim` });
      }
  }
}

/**
 * A block of the shapes most are (text, tool use and result, thinking), in a role that may carry
 * it, read without building the paths an error would name: true when it was (`scan` updated);
 * false for any other block, left to `checkBlock` (which refuses, naming the field, what is wrong).
 */
export function plainBlock(block: unknown, role: string, scan: BlockScan): boolean {
  if (!isRecord(block)) return false;
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string';
    case 'tool_use':
      if (role !== 'assistant' || typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input))
        return false;
      scan.calls.push(block.id);
      return true;
    case 'tool_result': {
      if (role !== 'user' || typeof block.tool_use_id !== 'string') return false;
      if (block.is_error !== undefined && typeof block.is_error !== 'boolean') return false;
      const content = block.content;
      if (content !== undefined && typeof content !== 'string') {
        if (!Array.isArray(content)) return false;
        for (const inner of content) if (!isRecord(inner) || typeof inner.type !== 'string') return false;
      }
      scan.results.push(block.tool_use_id);
      return true;
    }
    case 'thinking':
      if (role !== 'assistant' || typeof block.thinking !== 'string' || typeof block.signature !== 'string') return false;
      scan.thinking = true;
      return true;
    default:
      return false;
  }
}

export function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const warnings: Warning[] = [];
  const items = messages.map((message, index): Item => {
    const path = `messages[${index}]`;
    const m = expectRecord(message, path);
    const role = expectString(m.role, `${path}.role`);
    if (!ROLES.has(role)) malformed(`${path}.role`, `must be "user", "assistant" or "system", got ${JSON.stringify(role)}`);
    const scan: BlockScan = { calls: [], results: [], thinking: false, unknown: false };
    // A mid-conversation system message may carry only `output_config` (no content).
    if (typeof m.content !== 'string' && !(role === 'system' && m.content === undefined)) {
      const blocks = expectArray(m.content, `${path}.content`);
      blocks.forEach((block, k) => {
        if (plainBlock(block, role, scan)) return;
        checkBlock(expectRecord(block, `${path}.content[${k}]`), `${path}.content[${k}]`, role, scan, warnings, foreign);
      });
    }
    const item: { -readonly [K in keyof Item]: Item[K] } = {
      index,
      role: role as Item['role'],
      userTurn: role === 'user' && scan.results.length === 0,
      calls: scan.calls,
      results: scan.results,
      thinking: scan.thinking,
      original: message,
    };
    // Set only where true (spreading optional keys in makes each item a slow, large object).
    if (role === 'system') item.pinned = true;
    if (scan.unknown) item.sticky = true;
    return item;
  });
  return { items, warnings };
}

/** Whether an assistant message ends in a server tool's result (a system message may follow it). */
function endsInServerResult(item: Item): boolean {
  const content = (item.original as JsonObject | null)?.content;
  if (item.role !== 'assistant' || !Array.isArray(content)) return false;
  const last = content[content.length - 1];
  return isRecord(last) && SERVER_RESULTS.has(last.type as string);
}

/**
 * Whether `next` may directly follow `prev` (Messages API rules): the first message is a user
 * turn; roles alternate; a mid-conversation system message follows a user turn (one carrying tool
 * results included) or an assistant turn ending in a server tool's result, and is followed by an
 * assistant turn (or ends the history), so two never stand together and none sits between a
 * `tool_use` and its `tool_result` (the pairing rule says so too).
 */
export function canFollow(prev: Item | undefined, next: Item): boolean {
  if (!prev) return next.role === 'user';
  if (next.role === 'system') return prev.role === 'user' || endsInServerResult(prev);
  if (prev.role === 'system') return next.role === 'assistant';
  return alternates(prev, next);
}

function serverToolViolations(item: Item): Violation[] {
  const content = (item.original as JsonObject).content;
  if (!Array.isArray(content)) return [];
  const out: Violation[] = [];
  const started = new Set<string>();
  for (const block of content as JsonObject[]) {
    if (SERVER_CALLS.has(block.type as string)) started.add(block.id as string);
    else if (SERVER_RESULTS.has(block.type as string) && !started.has(block.tool_use_id as string)) {
      out.push({
        index: item.index,
        rule: 'orphan_server_tool_result',
        message: `${String(block.type)} for ${JSON.stringify(block.tool_use_id)} has no server_tool_use before it in the same message`,
      });
    }
  }
  return out;
}

/** Why `item` may not follow `prev`: the first message, a system message's place, or alternation. */
function orderViolation(prev: Item | undefined, item: Item, i: number): Violation {
  if (!prev) {
    const hint =
      item.role === 'system'
        ? ' (Anthropic takes the system prompt in the top-level `system` field; a system message inside `messages` follows a user turn)'
        : '';
    return { index: i, rule: 'must_start_with_user', message: `the first message must have role "user"${hint}` };
  }
  if (item.role === 'system')
    return {
      index: i,
      rule: 'system_message_placement',
      message: `a system message must follow a user turn or an assistant turn ending in a server tool result, not ${prev.role === 'system' ? 'another system message' : `message ${i - 1}`}`,
    };
  if (prev.role === 'system')
    return {
      index: i,
      rule: 'system_message_placement',
      message: `a system message (${i - 1}) must be followed by an assistant turn or end the history`,
    };
  return { index: i, rule: 'roles_must_alternate', message: `two ${item.role} messages in a row (${i - 1} and ${i})` };
}

export function violations(items: readonly Item[]): Violation[] {
  const out = pairingViolations(items);
  const seen = new Set<string>();
  items.forEach((item, i) => {
    const prev = items[i - 1];
    if (!canFollow(prev, item)) out.push(orderViolation(prev, item, i));
    const content = (item.original as JsonObject).content;
    if (item.role !== 'system' && isEmptyContent(content) && i !== items.length - 1) {
      out.push({ index: i, rule: 'empty_content', message: 'only the final assistant message may have empty content' });
    }
    if (item.results.length > 0 && Array.isArray(content)) {
      const firstOther = content.findIndex((b) => (b as JsonObject).type !== 'tool_result');
      const lastResult = content.findLastIndex((b) => (b as JsonObject).type === 'tool_result');
      if (firstOther !== -1 && firstOther < lastResult) {
        out.push({ index: i, rule: 'tool_results_first', message: 'tool_result blocks must come before any other block' });
      }
    }
    for (const id of item.calls) {
      if (seen.has(id))
        out.push({ index: i, rule: 'duplicate_tool_call_id', message: `tool_use id ${JSON.stringify(id)} is used twice` });
      seen.add(id);
    }
    out.push(...serverToolViolations(item));
  });
  return out.sort((a, b) => a.index - b.index);
}
