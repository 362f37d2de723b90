import type { CallSite, Countable, FormatAdapter, ResultSite, UnitKind } from '../history/format.js';
import { canFollow, classify, parse, violations } from './anthropic-parse.js';
import type { Foreign } from './shapes.js';
import { CountableBuilder, carriesThoughtSignature, type JsonObject, stringContent, systemTextOf } from './shared.js';

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
      case 'compaction':
        // The server's summary of what it compacted; its encrypted part is not read by the model as text.
        out.text(block.content);
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
  else if (Array.isArray(content)) addBlocks(out, content);
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
 * tool_result, server tool use and its result blocks, MCP blocks, container_upload, compaction,
 * fallback), and mid-conversation `role: "system"` messages (text, `tool_addition` and
 * `tool_removal` blocks), which are pinned: kept byte-identical where they stand, with the turn
 * they follow. Roles alternate and start with `user`; a system message follows a user turn (or an
 * assistant turn ending in a server tool result) and precedes an assistant turn; a user message
 * that carries `tool_result` blocks belongs to the tool exchange before it. Anthropic publishes no client tokenizer: counts are estimates, with an
 * image of unknown size counted as 1,600 tokens (about the largest image it accepts unscaled).
 */
export const anthropic = (foreign: Foreign): FormatAdapter => ({
  name: 'anthropic',
  classify: (message) => classify(message, foreign),
  parse: (messages) => parse(messages, foreign),
  violations,
  canFollow,
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
