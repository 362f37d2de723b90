import { detectFormat } from '../formats/detect.js';
import type { FormatAdapter } from '../history/format.js';
import { isRangePayload } from '../history/vocabulary.js';

/**
 * An offloaded original as the model reads it again: the text a tool returned (byte for byte
 * when it was one text), a summarized range rendered as a transcript, a thinking block's text, a
 * tool call's arguments. Anything else, as the JSON that was stored. Linear in the original.
 *
 * A range is a list of wire messages: it is read by its format's adapter (`detectFormat`). A
 * single unit (a tool result block, a Chat tool message, a Responses output item, a Gemini part)
 * is stored alone, without the message or the format it came from, and no adapter reads a unit
 * outside its message: `resultText` and `otherText` read the four shapes a unit may have.
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

/**
 * One message of a summarized range as transcript lines, read by its format's adapter: its prose,
 * each tool call it makes, each tool result it carries; as its JSON when it has none of them.
 */
function lines(format: FormatAdapter, role: string, message: unknown): string[] {
  const out: string[] = [];
  const prose = format.prose(message);
  if (prose !== '') out.push(`[${role}] ${prose}`);
  for (const c of format.callSites(message)) {
    const args = c.args ?? format.unitAt(message, 'call', c.slot);
    out.push(`[${role}] call ${c.name} ${JSON.stringify(args)}`);
  }
  for (const r of format.resultSites(message)) out.push(`[tool] ${r.text}`);
  return out.length > 0 ? out : [`[${role}] ${JSON.stringify(message)}`];
}

/**
 * The messages a range payload stands for, through the adapter `detectFormat` finds for them
 * (earlier ranges it folded are not followed: their ids are named). A range no adapter reads is
 * shown message by message as its JSON.
 */
function rangeText(payload: { messages: unknown[]; previous_id?: string | null }): string {
  const head = payload.previous_id ? `(continues the range ${payload.previous_id})\n` : '';
  let format: FormatAdapter | undefined;
  let roles: string[] = [];
  try {
    format = detectFormat(payload.messages);
    roles = format.parse(payload.messages).items.map((item) => item.role);
  } catch {
    format = undefined;
  }
  const body = payload.messages.flatMap((m, i) =>
    format ? lines(format, roles[i] ?? 'item', m) : [`[item] ${JSON.stringify(m)}`],
  );
  return `${head}${payload.messages.length} messages (${format?.name ?? 'unknown'}):\n${body.join('\n')}`;
}

/** The text of an original as the model should read it. */
export function originalText(content: unknown): string {
  if (isRangePayload(content)) return rangeText(content as { messages: unknown[]; previous_id?: string | null });
  if (isObject(content)) return resultText(content) ?? otherText(content) ?? JSON.stringify(content);
  return typeof content === 'string' ? content : JSON.stringify(content);
}
