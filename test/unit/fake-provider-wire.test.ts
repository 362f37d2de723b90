import t from 'tap';
import { readRequest, route } from '../support/provider/parse.js';
import { shellArguments, shellTool, toolSteps } from '../support/provider/scenario.js';
import { parseSse } from '../support/provider/sse.js';
import type { JsonObject, ModelRequest, ToolSpec } from '../support/provider/types.js';
import type { Answer, StreamEvent } from '../support/provider/wire.js';
import { anthropicWire } from '../support/provider/wire-anthropic.js';
import { geminiWire } from '../support/provider/wire-gemini.js';
import { chatWire, responsesWire } from '../support/provider/wire-openai.js';

// The fake provider's encoders and scenario (test/support/provider/): what a client reads back.

const usage = { input: 100, output: 7, cacheRead: 60, cacheWrite: 40 };
const call = { id: 'call_1', name: 'Bash', input: { command: 'seq 1 3' }, custom: false };
const answer = (text: Answer['text'], toolCalls: Answer['toolCalls'] = []): Answer => ({
  id: 'fake_0',
  model: 'm',
  text,
  toolCalls,
  usage,
});

function request(body: JsonObject, path = '/v1/messages'): ModelRequest {
  const r = route('POST', path, new URLSearchParams(path.split('?')[1] ?? ''));
  if (!r) throw new Error(`no route ${path}`);
  return readRequest(0, r, body, {}, path);
}

const joined = (events: Iterable<StreamEvent>) => [...events].map((e) => (typeof e === 'string' ? e : [...e].join(''))).join('');
const datas = (events: Iterable<StreamEvent>) => parseSse(joined(events)).map((e) => JSON.parse(e.data) as JsonObject);

t.test('route: by the path end, any prefix, with Gemini models and stream forms', async (t) => {
  const q = new URLSearchParams();
  t.same(route('POST', '/anthropic/v1/messages', q), { wire: 'anthropic', endpoint: 'model' });
  t.same(route('POST', '/v1/messages/count_tokens', q), { wire: 'anthropic', endpoint: 'count_tokens' });
  t.same(route('POST', '/openai/v1/responses', q), { wire: 'openai-responses', endpoint: 'model' });
  t.same(route('POST', '/v1/chat/completions', q), { wire: 'openai-chat', endpoint: 'model' });
  t.same(route('POST', '/v1beta/models/gemini-2.5-pro:streamGenerateContent', new URLSearchParams('alt=sse')), {
    wire: 'gemini',
    endpoint: 'model',
    model: 'gemini-2.5-pro',
    geminiStream: 'sse',
  });
  t.equal(route('POST', '/v1beta/models/g:streamGenerateContent', q)?.geminiStream, 'array');
  t.equal(route('POST', '/v1beta/models/g:countTokens', q)?.endpoint, 'count_tokens');
  t.equal(route('GET', '/v1/messages', q), undefined);
  t.equal(route('POST', '/v1/models', q), undefined);
});

t.test('Anthropic stream: message_start usage with the cache, text and tool deltas, message_delta, message_stop', async (t) => {
  const events = datas(anthropicWire.stream(answer('Running.', [call]), request({ model: 'm', messages: [] }), 'sse'));
  t.same(
    events.map((e) => e.type),
    ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop', 'content_block_start'].concat([
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]),
  );
  t.match(events[0], { message: { usage: { input_tokens: 0, cache_creation_input_tokens: 40, cache_read_input_tokens: 60 } } });
  const partial = events.filter((e) => (e.delta as JsonObject | undefined)?.type === 'input_json_delta');
  t.same(JSON.parse(partial.map((e) => (e.delta as JsonObject).partial_json).join('')), call.input);
  t.match(events.at(-2), { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } });
  const json = anthropicWire.json(answer('hi'), request({}));
  t.match(json, { type: 'message', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn' });
  t.same(anthropicWire.error(429, 'slow down'), { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
  t.same(anthropicWire.error(418, 'x'), { type: 'error', error: { type: 'invalid_request_error', message: 'x' } });
});

t.test('Responses stream: created … completed with cached tokens; a large text is whole in its done events', async (t) => {
  const req = request({ model: 'm', input: 'hi', tools: [{ type: 'custom', name: 'apply_patch' }] }, '/v1/responses');
  const patch = { id: 'call_2', name: 'apply_patch', input: { input: '*** Begin Patch' }, custom: true };
  const events = datas(responsesWire.stream(answer({ bytes: 50_000 }, [call, patch]), req, 'sse'));
  const types = events.map((e) => e.type);
  t.equal(types[0], 'response.created');
  t.equal(types.at(-1), 'response.completed');
  t.ok(types.includes('response.function_call_arguments.delta') && types.includes('response.custom_tool_call_input.done'));
  t.same(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
    'sequence numbers count up',
  );
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
  const done = events.find((e) => e.type === 'response.output_text.done');
  t.equal(deltas.join('').length, 50_000);
  t.equal(done?.text, deltas.join(''), 'the done event carries the same text');
  const completed = events.at(-1)?.response as JsonObject;
  t.match(completed, { status: 'completed', usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 60 } } });
  t.match(completed.output, [
    { type: 'message' },
    { type: 'function_call', arguments: '{"command":"seq 1 3"}' },
    { type: 'custom_tool_call', input: '*** Begin Patch' },
  ]);
  t.match(responsesWire.json(answer('hi'), req), { object: 'response', output: [{ content: [{ text: 'hi' }] }] });
  t.match(responsesWire.error(429, 'x'), { error: { message: 'x', type: 'requests', code: 'rate_limit_exceeded' } });
});

t.test(
  "Responses: a compaction reply is exactly one compaction output item, streamed or not (Codex's built-in provider)",
  async (t) => {
    const a: Answer = { ...answer(undefined), compaction: 'opaque-1' };
    const r = request({ model: 'm', input: [{ type: 'compaction_trigger' }] }, '/v1/responses');
    const item = { id: 'cmp_fake_0', type: 'compaction', encrypted_content: 'opaque-1' };
    t.same(responsesWire.json(a, r).output, [item]);
    const events = datas(responsesWire.stream(a, r, 'sse'));
    t.same(
      events.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.output_item.done',
        'response.completed',
      ],
    );
    t.same((events[events.length - 1] as { response: JsonObject }).response.output, [item]);
  },
);

t.test('Chat stream: the usage chunk only with stream_options.include_usage, then [DONE]', async (t) => {
  const without = parseSse(
    joined(chatWire.stream(answer('hello', [call]), request({ model: 'm', messages: [] }, '/v1/chat/completions'), 'sse')),
  );
  t.equal(without.at(-1)?.data, '[DONE]');
  t.notOk(
    without.some((e) => e.data.includes('"usage"')),
    'no usage field at all',
  );
  const req = request(
    { model: 'm', messages: [], stream: true, stream_options: { include_usage: true } },
    '/v1/chat/completions',
  );
  const chunks = parseSse(joined(chatWire.stream(answer('hello', [call]), req, 'sse')))
    .slice(0, -1)
    .map((e) => JSON.parse(e.data) as JsonObject);
  t.match(chunks.at(-1), { choices: [], usage: { prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 60 } } });
  t.match(chunks.at(-2), { choices: [{ finish_reason: 'tool_calls' }], usage: null });
  t.match(chatWire.json(answer('hi', [call]), req), {
    choices: [{ message: { content: 'hi', tool_calls: [{ id: 'call_1' }] } }],
  });
});

t.test('Gemini: SSE and the JSON-array form, usageMetadata with cached tokens, error status names', async (t) => {
  const req = request({ contents: [] }, '/v1beta/models/g:streamGenerateContent');
  const sse = parseSse(joined(geminiWire.stream(answer('hello there', [call]), req, 'sse'))).map(
    (e) => JSON.parse(e.data) as JsonObject,
  );
  t.match(sse.at(-1), { candidates: [{ finishReason: 'STOP', content: { parts: [{ functionCall: { name: 'Bash' } }] } }] });
  t.match(sse.at(-1), { usageMetadata: { promptTokenCount: 100, cachedContentTokenCount: 60 } });
  const events = [...geminiWire.stream(answer('hello there'), req, 'array')];
  t.equal(events.length, 2, 'one event per chunk');
  t.equal((JSON.parse(joined(events)) as unknown[]).length, 2, 'the events make one JSON array');
  t.same(geminiWire.error(429, 'x'), { error: { code: 429, message: 'x', status: 'RESOURCE_EXHAUSTED' } });
  t.same(geminiWire.countTokens(5), { totalTokens: 5 });
});

const claudeBash: ToolSpec = {
  name: 'Bash',
  kind: 'custom',
  schema: {
    type: 'object',
    properties: { command: { type: 'string' }, timeout: { type: 'number' }, description: { type: 'string' } },
    required: ['command'],
  },
};
const codexExec: ToolSpec = {
  name: 'exec_command',
  kind: 'function',
  schema: { type: 'object', properties: { cmd: { type: 'string' }, yield_time_ms: { type: 'number' } }, required: ['cmd'] },
};

t.test('shellTool and shellArguments: the shell tool by name, arguments that fit its schema', async (t) => {
  const tools: ToolSpec[] = [{ name: 'Read', kind: 'custom', schema: undefined }, codexExec, claudeBash];
  t.equal(shellTool(tools)?.name, 'Bash', 'a known name first');
  t.equal(shellTool([{ name: 'run_in_terminal', kind: 'function', schema: undefined }]), undefined);
  t.equal(shellTool([{ name: 'my_shell_tool', kind: 'function', schema: undefined }])?.name, 'my_shell_tool');
  t.same(shellArguments(claudeBash, 'seq 1 5', 0), { command: 'seq 1 5', description: 'Step 1: print a long list of numbers' });
  t.same(shellArguments(codexExec, 'seq 1 5', 1), { cmd: 'seq 1 5' });
  const array: ToolSpec = {
    name: 'shell',
    kind: 'function',
    schema: {
      properties: { command: { type: 'array' }, mode: { enum: ['a', 'b'] }, n: { type: 'integer', minimum: 2 } },
      required: ['command', 'mode', 'n'],
    },
  };
  t.same(shellArguments(array, 'ls', 0), { command: ['bash', '-lc', 'ls'], mode: 'a', n: 2 });
  const odd: ToolSpec = {
    name: 'run',
    kind: 'function',
    schema: { properties: { script: { type: 'string' }, ok: { type: 'boolean' } }, required: ['ok', 'script'] },
  };
  t.same(shellArguments(odd, 'ls', 0), { script: 'ls', ok: false }, 'no command property: the first required string');
});

t.test('toolSteps: a call per step counted from the tool results, then the final answer; no shell tool, a title', async (t) => {
  const scenario = toolSteps({ steps: 2, lines: 10 });
  const tools = [{ name: 'Bash', input_schema: claudeBash.schema ?? {} }];
  const at = (results: number) => {
    const content = Array.from({ length: results }, (_, i) => ({ type: 'tool_result', tool_use_id: `t${i}`, content: 'x' }));
    return request({
      model: 'm',
      tools,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'user', content },
      ],
    });
  };
  t.match(await scenario(at(0)), { toolCalls: [{ name: 'Bash', input: { command: 'seq 1 10' } }] });
  t.match(await scenario(at(1)), { toolCalls: [{ input: { command: 'seq 1 11' } }] });
  t.same(await scenario(at(2)), { text: 'Done: ran 2 commands.' });
  t.same(await scenario(request({ model: 'm', messages: [] })), { text: 'Counting numbers in the shell' });
});
