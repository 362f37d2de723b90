import { sseFrame, sseJson } from './sse.js';
import { spliceText, textChunks, wholeText } from './text.js';
import type { JsonObject, JsonValue, ModelRequest } from './types.js';
import { type Answer, jsonPieces, type StreamEvent, type WireEncoder } from './wire.js';

/** Stands for the answer's text inside an event that carries it whole (see `spliceText`). */
const TEXT = '\u0000fake-provider-text\u0000';

const ERRORS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: null },
};

function openaiError(status: number, message: string): JsonObject {
  const known = ERRORS[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  return { error: { message, type: known.type, param: null, code: known.code } };
}

function responsesUsage(a: Answer): JsonObject {
  return {
    input_tokens: a.usage.input,
    input_tokens_details: { cached_tokens: a.usage.cacheRead },
    output_tokens: a.usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: a.usage.input + a.usage.output,
  };
}

/** The Responses output items; a message's text is `TEXT` when `marked` (spliced in as it is written). */
function outputItems(a: Answer, marked: boolean): JsonObject[] {
  const items: JsonObject[] = [];
  if (a.text !== undefined) {
    const text = marked ? TEXT : wholeText(a.text);
    const content = [{ type: 'output_text', text, annotations: [] }];
    items.push({ id: `msg_${a.id}`, type: 'message', status: 'completed', role: 'assistant', content });
  }
  for (const call of a.toolCalls) {
    if (call.search) {
      // Codex's tool discovery: the client runs the search and answers with a tool_search_output.
      items.push({
        id: `tsc_${call.id}`,
        type: 'tool_search_call',
        status: 'completed',
        call_id: call.id,
        execution: 'client',
        arguments: call.input,
      });
      continue;
    }
    items.push(
      call.custom
        ? {
            id: `ctc_${call.id}`,
            type: 'custom_tool_call',
            status: 'completed',
            call_id: call.id,
            name: call.name,
            input: String(call.input.input ?? ''),
          }
        : {
            id: `fc_${call.id}`,
            type: 'function_call',
            status: 'completed',
            call_id: call.id,
            name: call.name,
            ...(call.namespace ? { namespace: call.namespace } : {}),
            arguments: JSON.stringify(call.input),
          },
    );
  }
  if (a.compaction !== undefined) items.push({ id: `cmp_${a.id}`, type: 'compaction', encrypted_content: a.compaction });
  return items;
}

function responseObject(a: Answer, status: string, output: JsonValue[], usage: JsonValue): JsonObject {
  return { id: `resp_${a.id}`, object: 'response', created_at: 1, status, model: a.model, output, usage };
}

function* responsesStream(a: Answer): Generator<StreamEvent> {
  let seq = 0;
  const event = (type: string, fields: JsonObject): string => sseJson({ type, sequence_number: seq++, ...fields }, type);
  const whole = (type: string, fields: JsonObject): Iterable<string> => {
    const value = { type, sequence_number: seq++, ...fields };
    const head = `event: ${type}\ndata: `;
    return a.text === undefined ? [sseJson(value, type)] : [head, ...spliceText(value, TEXT, a.text), '\n\n'];
  };
  yield event('response.created', { response: responseObject(a, 'in_progress', [], null) });
  yield event('response.in_progress', { response: responseObject(a, 'in_progress', [], null) });
  const items = outputItems(a, true);
  for (const [output_index, item] of items.entries()) {
    const item_id = String(item.id);
    if (item.type === 'message') {
      yield event('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      const part = { type: 'output_text', text: '', annotations: [] };
      yield event('response.content_part.added', { item_id, output_index, content_index: 0, part });
      for (const delta of textChunks(a.text ?? '')) {
        yield event('response.output_text.delta', { item_id, output_index, content_index: 0, delta, logprobs: [] });
      }
      yield whole('response.output_text.done', { item_id, output_index, content_index: 0, text: TEXT, logprobs: [] });
      yield whole('response.content_part.done', { item_id, output_index, content_index: 0, part: { ...part, text: TEXT } });
    } else if (item.type === 'compaction') {
      yield event('response.output_item.added', { output_index, item });
    } else if (item.type === 'tool_search_call') {
      yield event('response.output_item.added', { output_index, item: { ...item, status: 'in_progress' } });
    } else {
      const custom = item.type === 'custom_tool_call';
      const text = String(custom ? item.input : item.arguments);
      yield event('response.output_item.added', {
        output_index,
        item: { ...item, status: 'in_progress', [custom ? 'input' : 'arguments']: '' },
      });
      const kind = custom ? 'response.custom_tool_call_input' : 'response.function_call_arguments';
      for (const delta of jsonPieces(text)) yield event(`${kind}.delta`, { item_id, output_index, delta });
      yield event(`${kind}.done`, { item_id, output_index, [custom ? 'input' : 'arguments']: text });
    }
    yield item.type === 'message'
      ? whole('response.output_item.done', { output_index, item })
      : event('response.output_item.done', { output_index, item });
  }
  yield whole('response.completed', { response: responseObject(a, 'completed', items, responsesUsage(a)) });
}

/** The OpenAI Responses API's wire: `response.created` … `response.completed`, `{error}` bodies. */
export const responsesWire: WireEncoder = {
  stream: responsesStream,
  json: (a) => responseObject(a, 'completed', outputItems(a, false), responsesUsage(a)),
  error: openaiError,
  countTokens: (tokens) => ({ object: 'response.input_tokens', input_tokens: tokens }),
  requestIdHeader: 'x-request-id',
};

function chatUsage(a: Answer): JsonObject {
  return {
    prompt_tokens: a.usage.input,
    completion_tokens: a.usage.output,
    total_tokens: a.usage.input + a.usage.output,
    prompt_tokens_details: { cached_tokens: a.usage.cacheRead },
  };
}

function finishReason(a: Answer): string {
  return a.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

function* chatStream(a: Answer, request: ModelRequest): Generator<StreamEvent> {
  const includeUsage = (request.body.stream_options as JsonObject | undefined)?.include_usage === true;
  const base = { id: `chatcmpl-${a.id}`, object: 'chat.completion.chunk', created: 1, model: a.model };
  const chunk = (delta: JsonObject, finish_reason: string | null): string =>
    sseJson({ ...base, choices: [{ index: 0, delta, finish_reason }], ...(includeUsage ? { usage: null } : {}) });
  yield chunk({ role: 'assistant', content: '' }, null);
  for (const content of textChunks(a.text ?? '')) yield chunk({ content }, null);
  for (const [index, call] of a.toolCalls.entries()) {
    const head = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    yield chunk({ tool_calls: [head] }, null);
    for (const piece of jsonPieces(JSON.stringify(call.input)))
      yield chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null);
  }
  yield chunk({}, finishReason(a));
  if (includeUsage) yield sseJson({ ...base, choices: [], usage: chatUsage(a) });
  yield sseFrame('[DONE]');
}

/** The OpenAI Chat Completions wire: chunks, a usage chunk only when `stream_options.include_usage`, `[DONE]`. */
export const chatWire: WireEncoder = {
  stream: chatStream,
  json(a) {
    const tool_calls = a.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.input) },
    }));
    const message: JsonObject = { role: 'assistant', content: a.text === undefined ? null : wholeText(a.text) };
    if (tool_calls.length > 0) message.tool_calls = tool_calls;
    const choices = [{ index: 0, message, finish_reason: finishReason(a) }];
    return { id: `chatcmpl-${a.id}`, object: 'chat.completion', created: 1, model: a.model, choices, usage: chatUsage(a) };
  },
  error: openaiError,
  countTokens: (tokens) => ({ object: 'response.input_tokens', input_tokens: tokens }),
  requestIdHeader: 'x-request-id',
};
