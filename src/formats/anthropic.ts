import type { CallSite, Countable, Fit, FormatAdapter, ParseResult, ResultSite, UnitKind } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Violation, Warning } from '../history/types.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  alternates,
  CountableBuilder,
  carriesThoughtSignature,
  expectArray,
  expectRecord,
  expectString,
  isEmptyContent,
  isRecord,
  type JsonObject,
  malformed,
  stringContent,
  systemTextOf,
} from './shared.js';

/** Results of server-side tools: they answer a `server_tool_use` in the same assistant message. */
const SERVER_RESULTS = new Set([
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_result',
]);
const SERVER_CALLS = new Set(['server_tool_use', 'mcp_tool_use']);
const ASSISTANT_ONLY = new Set(['tool_use', 'thinking', 'redacted_thinking', ...SERVER_CALLS, ...SERVER_RESULTS]);
const USER_ONLY = new Set(['tool_result']);
const KNOWN = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'container_upload',
  'tool_reference',
  ...ASSISTANT_ONLY,
  ...USER_ONLY,
]);
/** What Anthropic messages carry: their keys and block types (the other formats learn them). */
export const ANTHROPIC_SHAPES: Shapes = { keys: ['content'], types: [...KNOWN] };

function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  if (message.role !== 'user' && message.role !== 'assistant') return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  const content = message.content;
  if (typeof content === 'string') return 'maybe';
  if (!Array.isArray(content)) return 'no';
  let fit: Fit = 'maybe';
  for (const block of content) {
    if (!isRecord(block) || typeof block.type !== 'string') return 'no';
    if (foreign.types.has(block.type)) return 'no';
    if (block.type !== 'text' && KNOWN.has(block.type)) fit = 'yes';
  }
  return fit;
}

interface BlockScan {
  calls: string[];
  results: string[];
  thinking: boolean;
}

function checkBlock(block: JsonObject, at: string, role: string, scan: BlockScan, warnings: Warning[], foreign: Foreign): void {
  const type = expectString(block.type, `${at}.type`);
  if (role === 'user' && ASSISTANT_ONLY.has(type)) malformed(`${at}.type`, `a ${type} block belongs in an assistant message`);
  if (role === 'assistant' && USER_ONLY.has(type)) malformed(`${at}.type`, `a ${type} block belongs in a user message`);
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
        warnings.push({ code: 'unknown_block_type', message: `${at}: unknown block type ${JSON.stringify(type)} kept verbatim` });
      }
  }
}

function parse(messages: readonly unknown[], foreign: Foreign): ParseResult {
  const warnings: Warning[] = [];
  const items = messages.map((message, index): Item => {
    const path = `messages[${index}]`;
    const m = expectRecord(message, path);
    const role = expectString(m.role, `${path}.role`);
    if (role !== 'user' && role !== 'assistant') {
      const hint = role === 'system' ? ' (Anthropic takes the system prompt in the top-level `system` field)' : '';
      malformed(`${path}.role`, `must be "user" or "assistant", got ${JSON.stringify(role)}${hint}`);
    }
    const scan: BlockScan = { calls: [], results: [], thinking: false };
    if (typeof m.content !== 'string') {
      const blocks = expectArray(m.content, `${path}.content`);
      blocks.forEach((block, k) => {
        checkBlock(expectRecord(block, `${path}.content[${k}]`), `${path}.content[${k}]`, role, scan, warnings, foreign);
      });
    }
    return {
      index,
      role,
      userTurn: role === 'user' && scan.results.length === 0,
      calls: scan.calls,
      results: scan.results,
      thinking: scan.thinking,
      original: message,
    };
  });
  return { items, warnings };
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

function violations(items: readonly Item[]): Violation[] {
  const out = pairingViolations(items);
  const seen = new Set<string>();
  items.forEach((item, i) => {
    const prev = items[i - 1];
    if (!alternates(prev, item)) {
      out.push(
        prev
          ? { index: i, rule: 'roles_must_alternate', message: `two ${item.role} messages in a row (${i - 1} and ${i})` }
          : { index: i, rule: 'must_start_with_user', message: 'the first message must have role "user"' },
      );
    }
    const content = (item.original as JsonObject).content;
    if (isEmptyContent(content) && i !== items.length - 1) {
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

function addBlocks(out: CountableBuilder, blocks: readonly unknown[]): void {
  for (const raw of blocks) {
    const block = raw as JsonObject;
    switch (block.type) {
      case 'text':
        out.text(block.text);
        break;
      case 'thinking':
        out.text(block.thinking);
        break;
      case 'redacted_thinking':
        out.text(block.data);
        break;
      case 'image':
        out.images++;
        break;
      case 'document': {
        const source = block.source as JsonObject;
        if (source.type === 'text') out.text(source.data);
        else if (source.type === 'content' && Array.isArray(source.content)) addBlocks(out, source.content);
        else out.documents++;
        break;
      }
      case 'tool_use':
      case 'server_tool_use':
      case 'mcp_tool_use':
        out.text(block.name).json(block.input);
        break;
      case 'tool_result':
        if (typeof block.content === 'string') out.text(block.content);
        else if (Array.isArray(block.content)) addBlocks(out, block.content);
        break;
      default:
        out.json(block);
    }
  }
}

function countable(message: unknown): Countable {
  const content = (message as JsonObject).content;
  const out = new CountableBuilder();
  if (typeof content === 'string') out.text(content);
  else addBlocks(out, content as unknown[]);
  return out.build();
}

function blocksOf(message: unknown): JsonObject[] {
  const content = (message as JsonObject).content;
  return Array.isArray(content) ? (content as JsonObject[]) : [];
}

function callSites(message: unknown): CallSite[] {
  const out: CallSite[] = [];
  blocksOf(message).forEach((block, slot) => {
    if (block.type === 'tool_use') {
      out.push({ id: block.id as string, name: block.name as string, args: block.input as Record<string, unknown>, slot });
    }
  });
  return out;
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as JsonObject[]).map((b) => (b.type === 'text' ? String(b.text) : `[${String(b.type)}]`)).join('\n');
}

function resultSites(message: unknown): ResultSite[] {
  const out: ResultSite[] = [];
  blocksOf(message).forEach((block, slot) => {
    if (block.type === 'tool_result') {
      out.push({ callId: block.tool_use_id as string, slot, text: blockText(block.content), error: block.is_error === true });
    }
  });
  return out;
}

function replaceUnit(message: unknown, _kind: UnitKind, slot: number, unit: unknown): unknown {
  const m = message as JsonObject;
  const content = [...(m.content as unknown[])];
  content[slot] = unit;
  return { ...m, content };
}

function withoutThinking(message: unknown): unknown | undefined {
  const blocks = blocksOf(message);
  const kept = blocks.filter((b) => b.type !== 'thinking' && b.type !== 'redacted_thinking');
  if (kept.length === blocks.length || kept.length === 0) return undefined;
  return { ...(message as JsonObject), content: kept };
}

/** Anthropic's `system`: a string or an array of text blocks. */
const systemText = (system: unknown): string => systemTextOf(system, system);

/**
 * Anthropic Messages `messages`: user and assistant turns with string content or blocks (text,
 * image, document, search_result, thinking and redacted_thinking with signatures, tool_use and
 * tool_result, server tool use and its result blocks, MCP blocks, container_upload). Roles
 * alternate and start with `user`; a user message that carries `tool_result` blocks belongs to the
 * tool exchange before it. Anthropic publishes no client tokenizer: counts are estimates, with an
 * image of unknown size counted as 1,600 tokens (about the largest image it accepts unscaled).
 */
export const anthropic = (foreign: Foreign): FormatAdapter => ({
  name: 'anthropic',
  classify: (message) => classify(message, foreign),
  parse: (messages) => parse(messages, foreign),
  violations,
  canFollow: alternates,
  countable,
  systemText,
  callSites,
  resultSites,
  unitAt: (message, _kind, slot) => blocksOf(message)[slot],
  replaceUnit,
  resultWithText: (unit, text) => ({ ...(unit as JsonObject), content: text }),
  callWithArgs: (unit, args) => ({ ...(unit as JsonObject), input: args }),
  withoutThinking,
  textMessage: (role, text) => ({ role, content: [{ type: 'text', text }] }),
  systemMessages: false,
  // Anthropic expects every tool_use to match a declared tool: summaries are marked assistant text.
  summaryExchange: () => undefined,
  prose: (message) => {
    const content = (message as JsonObject).content;
    if (typeof content === 'string') return content;
    return blocksOf(message)
      .filter((b) => b.type === 'text')
      .map((b) => String(b.text))
      .join('\n');
  },
  appendText: (message, text) => {
    const m = message as JsonObject;
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : blocksOf(m);
    return { ...m, content: [...blocks, { type: 'text', text }] };
  },
  lastText: (message) => {
    const last = blocksOf(message).at(-1);
    return last?.type === 'text' && typeof last.text === 'string' ? last.text : undefined;
  },
  dropLastText: (message, collapse) => {
    const rest = blocksOf(message).slice(0, -1);
    const single = rest.length === 1 && rest[0]?.type === 'text';
    return { ...(message as JsonObject), content: collapse && single ? rest[0]?.text : rest };
  },
  hasStringContent: stringContent,
  hasSignature: carriesThoughtSignature,
  reasoningText: () => undefined,
  framing: { perMessage: 3, perRequest: 3 },
  media: { image: 1600, document: 1500, audio: 0 },
});
