import type { CallSite, Countable, FormatAdapter, ResultSite, UnitKind } from '../history/format.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { classify, parse, violations } from './openai-chat-parse.js';
import type { Foreign } from './shapes.js';
import {
  CountableBuilder,
  carriesThoughtSignature,
  isRecord,
  type JsonObject,
  parseArgs,
  plainSystemText,
  stringContent,
} from './shared.js';

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
