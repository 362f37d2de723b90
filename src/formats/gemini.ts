import type { CallSite, Countable, Fit, FormatAdapter, ParseResult, ResultSite, UnitKind } from '../history/format.js';
import { pairingViolations } from '../history/pairing.js';
import type { Item, Violation, Warning } from '../history/types.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { type Foreign, hasForeignKey, type Shapes } from './shapes.js';
import {
  alternates,
  CountableBuilder,
  carriesThoughtSignature,
  expectArray,
  expectRecord,
  expectString,
  isRecord,
  type JsonObject,
  malformed,
  systemTextOf,
} from './shared.js';

/** The data fields of a Part (exactly one per part), by their JSON name and proto name. */
const DATA_FIELDS = [
  ['text', 'text'],
  ['inlineData', 'inline_data'],
  ['fileData', 'file_data'],
  ['functionCall', 'function_call'],
  ['functionResponse', 'function_response'],
  ['executableCode', 'executable_code'],
  ['codeExecutionResult', 'code_execution_result'],
] as const;

/** A part's value under either name of a field, and the name it used. */
function field(part: JsonObject, camel: string, snake: string): [unknown, string] {
  return camel in part ? [part[camel], camel] : [part[snake], snake];
}

/** What Gemini contents carry (the other formats learn it): their parts. */
export const GEMINI_SHAPES: Shapes = { keys: ['parts'], types: [] };

function classify(message: unknown, foreign: Foreign): Fit {
  if (!isRecord(message)) return 'no';
  if (hasForeignKey(message, foreign)) return 'no';
  // `parts` is Gemini's alone; a wrong role is then a malformed Gemini content, named by `parse`.
  return Array.isArray(message.parts) ? 'yes' : 'no';
}

function partsOf(message: unknown): JsonObject[] {
  return (message as JsonObject).parts as JsonObject[];
}

/**
 * Call ids: the call's own `id` when it has one, else its name and its rank among same-named
 * calls in the content (`read_file#0`), so that a response matches its call by id or, as Gemini
 * does without ids, by name and order.
 */
function keyedIds(parts: readonly JsonObject[], camel: 'functionCall' | 'functionResponse', snake: string): (string | null)[] {
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
const SERVER_PARTS = [
  ['toolCall', 'tool_call'],
  ['toolResponse', 'tool_response'],
] as const;

/** What a part is to the pairing rules: one of the data fields, a server tool part, or a type not known. */
type PartKind = 'data' | 'server' | 'unknown';

function checkPart(part: JsonObject, at: string, role: string): PartKind {
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
const PART_META = new Set([
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

function parse(messages: readonly unknown[]): ParseResult {
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
    return {
      index,
      role: role === 'model' ? 'assistant' : 'user',
      userTurn: role === 'user' && results.length === 0,
      calls,
      results,
      thinking: typed.some((p) => p.thought === true),
      original: message,
      ...(sticky ? { sticky } : {}),
    };
  });
  return { items, warnings };
}

function violations(items: readonly Item[]): Violation[] {
  return pairingViolations(items);
}

function media(out: CountableBuilder, blob: unknown): void {
  const mime = isRecord(blob) ? String(blob.mimeType ?? blob.mime_type ?? '') : '';
  if (mime.startsWith('image/')) out.images++;
  else if (mime.startsWith('audio/')) out.audio++;
  else out.documents++;
}

function countable(message: unknown): Countable {
  const out = new CountableBuilder();
  for (const part of partsOf(message)) {
    if (typeof part.text === 'string') out.text(part.text);
    else if ('inlineData' in part || 'inline_data' in part) media(out, field(part, 'inlineData', 'inline_data')[0]);
    else if ('fileData' in part || 'file_data' in part) media(out, field(part, 'fileData', 'file_data')[0]);
    else if ('functionCall' in part || 'function_call' in part) {
      const fc = field(part, 'functionCall', 'function_call')[0] as JsonObject;
      out.text(fc.name).json(fc.args ?? {});
    } else if ('functionResponse' in part || 'function_response' in part) {
      const fr = field(part, 'functionResponse', 'function_response')[0] as JsonObject;
      out.text(fr.name).text(responseText(fr.response));
      // A multimodal response's own parts: media at their flat rates.
      if (Array.isArray(fr.parts))
        for (const inner of fr.parts) if (isRecord(inner)) media(out, inner.inlineData ?? inner.fileData);
    } else out.json(part);
  }
  return out.build();
}

/** The text of a function response: its single string field (output, result, content), else its JSON. */
function responseText(response: unknown): string {
  if (isRecord(response)) {
    const values = Object.values(response);
    if (values.length === 1 && typeof values[0] === 'string') return values[0];
  }
  return JSON.stringify(response ?? {});
}

function callSites(message: unknown): CallSite[] {
  const parts = partsOf(message);
  const ids = keyedIds(parts, 'functionCall', 'function_call');
  const out: CallSite[] = [];
  parts.forEach((part, slot) => {
    const id = ids[slot];
    if (id === null || id === undefined) return;
    const fc = field(part, 'functionCall', 'function_call')[0] as JsonObject;
    out.push({ id, name: fc.name as string, args: isRecord(fc.args) ? fc.args : {}, slot });
  });
  return out;
}

function resultSites(message: unknown): ResultSite[] {
  const parts = partsOf(message);
  const ids = keyedIds(parts, 'functionResponse', 'function_response');
  const out: ResultSite[] = [];
  parts.forEach((part, slot) => {
    const id = ids[slot];
    if (id === null || id === undefined) return;
    const fr = field(part, 'functionResponse', 'function_response')[0] as JsonObject;
    out.push({ callId: id, slot, text: responseText(fr.response) });
  });
  return out;
}

function replaceUnit(message: unknown, _kind: UnitKind, slot: number, unit: unknown): unknown {
  const parts: unknown[] = [...partsOf(message)];
  parts[slot] = unit;
  return { ...(message as JsonObject), parts };
}

function resultWithText(unit: unknown, text: string): unknown {
  const part = unit as JsonObject;
  const [fr, key] = field(part, 'functionResponse', 'function_response');
  return { ...part, [key]: { ...(fr as JsonObject), response: { output: text } } };
}

function callWithArgs(unit: unknown, args: Record<string, unknown>): unknown {
  const part = unit as JsonObject;
  const [fc, key] = field(part, 'functionCall', 'function_call');
  return { ...part, [key]: { ...(fc as JsonObject), args } };
}

function withoutThinking(message: unknown): unknown | undefined {
  const parts = partsOf(message);
  const kept = parts.filter((p) => p.thought !== true);
  if (kept.length === parts.length || kept.length === 0) return undefined;
  return { ...(message as JsonObject), parts: kept };
}

/** Gemini's `systemInstruction`: a content whose text parts are the prompt. */
const systemText = (system: unknown): string => systemTextOf(system, isRecord(system) ? system.parts : undefined);

/**
 * Gemini `contents`: `user` and `model` turns of parts (text, inlineData, fileData, functionCall,
 * functionResponse, executableCode, codeExecutionResult; `thought` parts and `thoughtSignature`s;
 * JSON or proto field names), with the system prompt in the top-level `system` (Gemini's
 * `systemInstruction`). A function response answers the call with its id or, without ids, the
 * same-named call in order; parallel calls and their responses stay together. Signatures stay on
 * the parts they came with: kept parts are never edited. Google publishes no client tokenizer:
 * counts are estimates; an image of unknown size counts as four 768-pixel tiles (1,032 tokens).
 */
export const gemini = (foreign: Foreign): FormatAdapter => ({
  name: 'gemini',
  classify: (message) => classify(message, foreign),
  parse,
  violations,
  canFollow: alternates,
  countable,
  systemText,
  callSites,
  resultSites,
  unitAt: (message, _kind, slot) => partsOf(message)[slot],
  replaceUnit,
  resultWithText,
  callWithArgs,
  withoutThinking,
  textMessage: (role, text) => ({ role: role === 'assistant' ? 'model' : 'user', parts: [{ text }] }),
  systemMessages: false,
  summaryExchange: (id, text, { signed }) => [
    {
      role: 'model',
      parts: [
        {
          functionCall: { id, name: SUMMARY_TOOL, args: {} },
          ...(signed ? { thoughtSignature: 'skip_thought_signature_validator' } : {}),
        },
      ],
    },
    { role: 'user', parts: [{ functionResponse: { id, name: SUMMARY_TOOL, response: { output: text } } }] },
  ],
  prose: (message) =>
    partsOf(message)
      .filter((p) => typeof p.text === 'string' && p.thought !== true)
      .map((p) => p.text as string)
      .join('\n'),
  appendText: (message, text) => ({ ...(message as JsonObject), parts: [...partsOf(message), { text }] }),
  lastText: (message) => {
    const last = partsOf(message).at(-1);
    return typeof last?.text === 'string' && last.thought !== true ? last.text : undefined;
  },
  dropLastText: (message) => ({ ...(message as JsonObject), parts: partsOf(message).slice(0, -1) }),
  hasStringContent: () => false,
  hasSignature: carriesThoughtSignature,
  reasoningText: () => undefined,
  framing: { perMessage: 3, perRequest: 3 },
  media: { image: 1032, document: 1500, audio: 960 },
});
