import { sseJson } from './sse.js';
import { textChunks, wholeText } from './text.js';
import type { JsonObject, UsageFigures } from './types.js';
import { type Answer, jsonPieces, type StreamEvent, type WireEncoder } from './wire.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** Anthropic's usage object: `input_tokens` is the uncached remainder. */
function usageOf(u: UsageFigures): JsonObject {
  return {
    input_tokens: Math.max(0, u.input - u.cacheRead - u.cacheWrite),
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    output_tokens: u.output,
  };
}

function stopReason(a: Answer): string {
  return a.toolCalls.length > 0 ? 'tool_use' : 'end_turn';
}

function* stream(a: Answer): Generator<StreamEvent> {
  const message = {
    id: `msg_${a.id}`,
    type: 'message',
    role: 'assistant',
    model: a.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...usageOf(a.usage), output_tokens: 1 },
  };
  yield sseJson({ type: 'message_start', message }, 'message_start');
  let index = 0;
  if (a.text !== undefined) {
    yield sseJson({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, 'content_block_start');
    yield sseJson({ type: 'ping' }, 'ping');
    for (const text of textChunks(a.text)) {
      yield sseJson({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }, 'content_block_delta');
    }
    yield sseJson({ type: 'content_block_stop', index }, 'content_block_stop');
    index++;
  }
  for (const call of a.toolCalls) {
    const block = { type: 'tool_use', id: call.id, name: call.name, input: {} };
    yield sseJson({ type: 'content_block_start', index, content_block: block }, 'content_block_start');
    for (const partial_json of jsonPieces(JSON.stringify(call.input))) {
      yield sseJson(
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } },
        'content_block_delta',
      );
    }
    yield sseJson({ type: 'content_block_stop', index }, 'content_block_stop');
    index++;
  }
  const delta = { stop_reason: stopReason(a), stop_sequence: null };
  yield sseJson({ type: 'message_delta', delta, usage: usageOf(a.usage) }, 'message_delta');
  yield sseJson({ type: 'message_stop' }, 'message_stop');
}

/** The Anthropic Messages API's wire: `message_start` … `message_stop`, `{type: "error", error}` bodies. */
export const anthropicWire: WireEncoder = {
  stream,
  json(a) {
    const content: JsonObject[] = [];
    if (a.text !== undefined) content.push({ type: 'text', text: wholeText(a.text) });
    for (const call of a.toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
    return {
      id: `msg_${a.id}`,
      type: 'message',
      role: 'assistant',
      model: a.model,
      content,
      stop_reason: stopReason(a),
      stop_sequence: null,
      usage: usageOf(a.usage),
    };
  },
  error(status, message) {
    return {
      type: 'error',
      error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
    };
  },
  countTokens(tokens) {
    return { input_tokens: tokens };
  },
  requestIdHeader: 'request-id',
};
