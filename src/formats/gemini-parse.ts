import type { Fit, ParseResult } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Violation, Warning } from '../history/types.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import { expectArray, expectRecord, expectString, isRecord, type JsonObject, malformed } from './shared.js';

/** The data fields of a Part (exactly one per part), by their JSON name and proto name. */
export const DATA_FIELDS = [
  ['text', 'text'],
  ['inlineData', 'inline_data'],
  ['fileData', 'file_data'],
  ['functionCall', 'function_call'],
  ['functionResponse', 'function_response'],
  ['executableCode', 'executable_code'],
  ['codeExecutionResult', 'code_execution_result'],
] as const;

/** A part's value under either name of a field, and the name it used. */
export function field(part: JsonObject, camel: string, snake: string): [unknown, string] {
  return camel in part ? [part[camel], camel] : [part[snake], snake];
}

/** What Gemini contents carry (the other formats learn it): their parts. */
export const GEMINI_SHAPES: Shapes = { keys: ['parts'], types: [] };

export function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  // `parts` is Gemini's alone; a wrong role is then a malformed Gemini content, named by `parse`.
  return Array.isArray(message.parts) ? 'yes' : 'no';
}

export function partsOf(message: unknown): JsonObject[] {
  return (message as JsonObject).parts as JsonObject[];
}

/**
 * Call ids: the call's own `id` when it has one, else its name and its rank among same-named
 * calls in the content (`read_file#0`), so that a response matches its call by id or, as Gemini
 * does without ids, by name and order.
 */
export function keyedIds(
  parts: readonly JsonObject[],
  camel: 'functionCall' | 'functionResponse',
  snake: string,
): (string | null)[] {
  const seen = new Map<string, number>();
  return parts.map((part) => {
    const [value] = field(part, camel, snake);
    if (!isRecord(value)) return null;
    if (typeof value.id === 'string' && value.id !== '') return value.id;
    const name = String(value.name);
    const rank = seen.get(name) ?? 0;
    seen.set(name, rank + 1);
    return `${name}#${rank}`;
  });
}

/**
 * Parts of the newest API that the service keeps as they came: server-side tool calls and their
 * responses (`toolCall`, `toolResponse`: the client echoes them back; which content holds the
 * response is the server's affair, so their contents are never separated from their neighbours).
 */
export const SERVER_PARTS = [
  ['toolCall', 'tool_call'],
  ['toolResponse', 'tool_response'],
] as const;

/** What a part is to the pairing rules: one of the data fields, a server tool part, or a type not known. */
export type PartKind = 'data' | 'server' | 'unknown';

export function checkPart(part: JsonObject, at: string, role: string): PartKind {
  const present = DATA_FIELDS.filter(([camel, snake]) => camel in part || snake in part);
  if (present.length > 1) {
    malformed(
      at,
      `a part needs exactly one of text, inlineData, fileData, functionCall, functionResponse, executableCode, codeExecutionResult; got ${present.length}`,
    );
  }
  const [camel, snake] = (present[0] ?? []) as readonly [string, string] | readonly [];
  if (camel === undefined || snake === undefined) {
    if (SERVER_PARTS.some(([c, sn]) => c in part || sn in part)) return 'server';
    if (Object.keys(part).every((k) => PART_META.has(k)))
      malformed(
        at,
        'a part needs one of text, inlineData, fileData, functionCall, functionResponse, executableCode, codeExecutionResult',
      );
    return 'unknown';
  }
  const [value, key] = field(part, camel, snake);
  if (camel === 'text') expectString(value, `${at}.text`);
  else expectRecord(value, `${at}.${key}`);
  const named = value as JsonObject;
  // Without an id, a response finds its call by name and order: the name is needed then.
  const needsName = typeof named.id !== 'string' || named.id === '';
  if (camel === 'functionCall') {
    if (role !== 'model') malformed(`${at}.${key}`, 'a function call belongs in a "model" content');
    if (needsName) expectString(named.name, `${at}.${key}.name`);
  }
  if (camel === 'functionResponse') {
    if (role !== 'user') malformed(`${at}.${key}`, 'a function response belongs in a "user" content');
    if (needsName) expectString(named.name, `${at}.${key}.name`);
    // A multimodal response may carry only `parts`.
    if (named.response !== undefined || named.parts === undefined) expectRecord(named.response, `${at}.${key}.response`);
  }
  return 'data';
}

/** Keys of a part that qualify its data (not data themselves): a part of nothing but these has none. */
export const PART_META = new Set([
  'thought',
  'thoughtSignature',
  'thought_signature',
  'videoMetadata',
  'video_metadata',
  'mediaResolution',
  'media_resolution',
  'partMetadata',
  'part_metadata',
  'mediaProcessing',
  'media_processing',
  'speechMetadata',
  'speech_metadata',
]);

export function parse(messages: readonly unknown[]): ParseResult {
  const warnings: Warning[] = [];
  const items = messages.map((message, index): Item => {
    const path = `messages[${index}]`;
    const m = expectRecord(message, path);
    const role = m.role ?? 'user';
    if (role !== 'user' && role !== 'model') malformed(`${path}.role`, `must be "user" or "model", got ${JSON.stringify(role)}`);
    const parts = expectArray(m.parts, `${path}.parts`);
    if (parts.length === 0) malformed(`${path}.parts`, 'must not be empty');
    let sticky = false;
    parts.forEach((part, k) => {
      const at = `${path}.parts[${k}]`;
      const kind = checkPart(expectRecord(part, at), at, role);
      if (kind === 'data') return;
      sticky = true;
      if (kind === 'unknown')
        warnings.push({ code: 'unknown_part_type', message: `${at}: a part of a kind Compactor does not know, kept verbatim` });
    });
    const typed = parts as JsonObject[];
    const calls = keyedIds(typed, 'functionCall', 'function_call').filter((id): id is string => id !== null);
    // A streamed function response answers its call in several parts: the call is answered once.
    const results = [
      ...new Set(keyedIds(typed, 'functionResponse', 'function_response').filter((id): id is string => id !== null)),
    ];
    const item: { -readonly [K in keyof Item]: Item[K] } = {
      index,
      role: role === 'model' ? 'assistant' : 'user',
      userTurn: role === 'user' && results.length === 0,
      calls,
      results,
      thinking: typed.some((p) => p.thought === true),
      original: message,
    };
    if (sticky) item.sticky = true;
    return item;
  });
  return { items, warnings };
}

export function violations(items: readonly Item[]): Violation[] {
  return pairingViolations(items);
}
