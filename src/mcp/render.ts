import { detectFormat } from '../formats/detect.js';
import { isRangePayload } from '../history/vocabulary.js';

/**
 * An offloaded original as the model reads it again: the text a tool returned (byte for byte
 * when it was one text), a summarized range rendered as a transcript, a thinking block's text, a
 * tool call's arguments. Anything else, as the JSON that was stored. Linear in the original.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A content value's text: a string as it is; text blocks or parts joined; else its JSON. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const texts = content.map((b) => (isObject(b) && typeof b.text === 'string' ? b.text : undefined));
    if (texts.every((t) => t !== undefined)) return texts.join('\n');
  }
  return JSON.stringify(content);
}

/**
 * The output of one tool result unit, in whichever format it came: an Anthropic `tool_result`
 * block, a Chat `tool` message, a Responses `*_output` item, a Gemini `functionResponse` part.
 */
function resultText(unit: Json): string | undefined {
  if (unit.type === 'tool_result' || unit.role === 'tool') return textOf(unit.content ?? '');
  if (typeof unit.type === 'string' && unit.type.endsWith('_output') && 'output' in unit) return textOf(unit.output);
  const response = (unit.functionResponse ?? unit.function_response) as Json | undefined;
  if (isObject(response)) {
    const body = response.response;
    if (isObject(body)) {
      const values = Object.values(body);
      if (values.length === 1 && typeof values[0] === 'string') return values[0];
    }
    return JSON.stringify(body ?? response);
  }
  return undefined;
}

/** A thinking block's or reasoning item's text, or a call's arguments. */
function otherText(unit: Json): string | undefined {
  if (typeof unit.thinking === 'string') return unit.thinking;
  if (unit.type === 'reasoning' && Array.isArray(unit.summary)) return textOf(unit.summary);
  if ('input' in unit && (unit.type === 'tool_use' || unit.type === 'server_tool_use')) return JSON.stringify(unit.input);
  if (typeof unit.arguments === 'string') return unit.arguments;
  return undefined;
}

/** One wire message of a summarized range as a transcript line: role, then its text. */
function line(message: unknown): string {
  if (!isObject(message)) return JSON.stringify(message);
  const role = String(message.role ?? message.type ?? 'item');
  const result = resultText(message);
  if (result !== undefined) return `[${role}] ${result}`;
  const content = message.content ?? message.parts ?? message.output ?? message.arguments;
  return `[${role}] ${content === undefined ? JSON.stringify(message) : textOf(content)}`;
}

/** The messages a range payload stands for, earlier ranges it folded not followed (their ids are named). */
function rangeText(payload: { messages: unknown[]; previous_id?: string | null }): string {
  let format = 'unknown';
  try {
    format = detectFormat(payload.messages).name;
  } catch {
    // A range the detector cannot read is still rendered line by line.
  }
  const head = payload.previous_id ? `(continues the range ${payload.previous_id})\n` : '';
  return `${head}${payload.messages.length} messages (${format}):\n${payload.messages.map(line).join('\n')}`;
}

/** The text of an original as the model should read it. */
export function originalText(content: unknown): string {
  if (isRangePayload(content)) return rangeText(content as { messages: unknown[]; previous_id?: string | null });
  if (isObject(content)) return resultText(content) ?? otherText(content) ?? JSON.stringify(content);
  return typeof content === 'string' ? content : JSON.stringify(content);
}
