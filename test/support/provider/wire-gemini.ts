import { textChunks, wholeText } from './text.js';
import type { JsonObject } from './types.js';
import type { Answer, StreamEvent, WireEncoder } from './wire.js';

const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function usageMetadata(a: Answer): JsonObject {
  const usage: JsonObject = {
    promptTokenCount: a.usage.input,
    candidatesTokenCount: a.usage.output,
    totalTokenCount: a.usage.input + a.usage.output,
  };
  if (a.usage.cacheRead > 0) usage.cachedContentTokenCount = a.usage.cacheRead;
  return usage;
}

function candidate(parts: JsonObject[], finishReason?: string): JsonObject {
  const c: JsonObject = { content: { role: 'model', parts }, index: 0 };
  if (finishReason) c.finishReason = finishReason;
  return c;
}

function callParts(a: Answer): JsonObject[] {
  return a.toolCalls.map((call) => ({ functionCall: { name: call.name, args: call.input } }));
}

/** The stream's chunks: the text piece by piece, then the calls, the finish reason and the usage. */
function* chunks(a: Answer): Generator<JsonObject> {
  const modelVersion = a.model;
  for (const text of textChunks(a.text ?? '')) yield { candidates: [candidate([{ text }])], modelVersion };
  yield { candidates: [candidate(callParts(a), 'STOP')], usageMetadata: usageMetadata(a), modelVersion, responseId: a.id };
}

function* stream(a: Answer, _request: unknown, form: 'sse' | 'array'): Generator<StreamEvent> {
  if (form === 'sse') {
    for (const chunk of chunks(a)) yield `data: ${JSON.stringify(chunk)}\r\n\r\n`;
    return;
  }
  // The JSON-array form: `[` chunk `,\r\n` chunk … `]`, each chunk one event (the last carries the `]`).
  let previous: JsonObject | undefined;
  let first = true;
  for (const chunk of chunks(a)) {
    if (previous) {
      yield `${first ? '[' : ',\r\n'}${JSON.stringify(previous)}`;
      first = false;
    }
    previous = chunk;
  }
  yield `${first ? '[' : ',\r\n'}${JSON.stringify(previous)}]`;
}

/** The Gemini API's wire (`generateContent`, `streamGenerateContent` as SSE or a JSON array), `{error: {code, message, status}}` bodies. */
export const geminiWire: WireEncoder = {
  stream,
  json(a) {
    const parts: JsonObject[] = a.text === undefined ? [] : [{ text: wholeText(a.text) }];
    parts.push(...callParts(a));
    return { candidates: [candidate(parts, 'STOP')], usageMetadata: usageMetadata(a), modelVersion: a.model, responseId: a.id };
  },
  error(status, message) {
    return { error: { code: status, message, status: STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT') } };
  },
  countTokens: (tokens) => ({ totalTokens: tokens }),
  requestIdHeader: 'x-goog-request-id',
};
