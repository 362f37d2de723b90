import type { CallSite, Countable, FormatAdapter, ResultSite, UnitKind } from '../history/format.js';
import { SUMMARY_TOOL } from '../history/vocabulary.js';
import { classify, field, GEMINI_SHAPES, keyedIds, parse, partsOf, violations } from './gemini-parse.js';
import type { Foreign } from './shapes.js';
import { alternates, CountableBuilder, carriesThoughtSignature, isRecord, type JsonObject, systemTextOf } from './shared.js';

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
export { GEMINI_SHAPES };

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
