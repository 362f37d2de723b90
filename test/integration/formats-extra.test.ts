import t from 'tap';
import { build } from '../support/app.js';
import { violationsOf } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * Histories modelled on the providers' documented examples (OpenAI's function calling with
 * reasoning models, Gemini's thought signatures with parallel calls), round-tripped and reduced.
 */
const longOutput = (label: string) => Array.from({ length: 60 }, (_, i) => `${label} row ${i}: value=${i * 17}`).join('\n');

const responsesParallel = [
  { type: 'message', role: 'developer', content: 'You answer weather questions.' },
  { role: 'user', content: 'What is the weather like in Paris and Bogotá today?' },
  {
    type: 'reasoning',
    id: 'rs_67ccd2bf17f0819081ff3bb2cf6508e6',
    summary: [{ type: 'summary_text', text: 'Two cities: call get_weather twice in parallel.' }],
    encrypted_content: 'gAAAAABnzNK_opaque_reasoning_state_AAAA==',
  },
  {
    type: 'function_call',
    id: 'fc_12345xyz',
    call_id: 'call_12345xyz',
    name: 'get_weather',
    arguments: '{"latitude":48.8566,"longitude":2.3522}',
    status: 'completed',
  },
  {
    type: 'function_call',
    id: 'fc_67890abc',
    call_id: 'call_67890abc',
    name: 'get_weather',
    arguments: '{"latitude":4.711,"longitude":-74.0721}',
    status: 'completed',
  },
  { type: 'function_call_output', call_id: 'call_12345xyz', output: longOutput('paris') },
  { type: 'function_call_output', call_id: 'call_67890abc', output: longOutput('bogota') },
  {
    type: 'message',
    role: 'assistant',
    id: 'msg_1',
    status: 'completed',
    content: [{ type: 'output_text', text: 'Paris is mild; Bogotá is rainy.', annotations: [], logprobs: [] }],
  },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And tomorrow in Paris?' }] },
  { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'gAAAAABn_second_opaque==' },
  {
    type: 'function_call',
    id: 'fc_3',
    call_id: 'call_3',
    name: 'get_forecast',
    arguments: '{"city":"Paris","days":1}',
    status: 'completed',
  },
  { type: 'function_call_output', call_id: 'call_3', output: longOutput('forecast') },
  { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_custom', name: 'code_exec', input: 'print("hi")' },
  { type: 'custom_tool_call_output', call_id: 'call_custom', output: 'hi' },
  { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'paris weather' } },
  {
    type: 'message',
    role: 'assistant',
    id: 'msg_2',
    status: 'completed',
    content: [{ type: 'output_text', text: 'Sunny tomorrow.', annotations: [], logprobs: [] }],
  },
];

const geminiSigned = [
  { role: 'user', parts: [{ text: 'Check flight status for AA100 and book a taxi at 10 AM if it is delayed.' }] },
  {
    role: 'model',
    parts: [
      { text: 'I will check both flights first.', thought: true },
      { functionCall: { name: 'check_flight', args: { flight: 'AA100' } }, thoughtSignature: 'c2lnbmF0dXJlLWEx' },
      { functionCall: { name: 'check_flight', args: { flight: 'AA200' } } },
    ],
  },
  {
    role: 'user',
    parts: [
      { functionResponse: { name: 'check_flight', response: { status: longOutput('AA100 delayed') } } },
      { functionResponse: { name: 'check_flight', response: { status: 'on time' } } },
    ],
  },
  {
    role: 'model',
    parts: [
      { function_call: { id: 'taxi-1', name: 'book_taxi', args: { time: '10 AM' } }, thought_signature: 'c2lnbmF0dXJlLWIy' },
    ],
  },
  { role: 'user', parts: [{ function_response: { id: 'taxi-1', name: 'book_taxi', response: { booking: 'confirmed' } } }] },
  { role: 'model', parts: [{ text: 'AA100 is delayed; a taxi is booked for 10 AM.', thoughtSignature: 'c2lnbmF0dXJlLWMz' }] },
];

for (const [format, messages] of [
  ['openai-responses', responsesParallel],
  ['gemini', geminiSigned],
] as const) {
  t.test(`${format}: a documented history round-trips, and reduces validly`, async (t) => {
    const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
    t.same(schemaErrors(format, messages), [], "the fixture passes the provider's schema");
    const validate = await app.inject({ method: 'POST', url: '/v1/validate', payload: { messages } });
    t.same(validate.json(), { valid: true, format, violations: [], warnings: [] }, 'detected and valid');

    const all = (await app.inject({ method: 'POST', url: '/v1/window', payload: { messages, keep: { runs: 10 } } })).json();
    t.equal(JSON.stringify(all.messages), JSON.stringify(messages), 'kept items come back as the same JSON values');

    const window = (await app.inject({ method: 'POST', url: '/v1/window', payload: { messages, keep: { messages: 2 } } })).json();
    t.same(violationsOf(format, window.messages), []);
    t.same(schemaErrors(format, window.messages), []);
    t.ok(window.applied);

    const compact = (
      await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages, keep_tool_uses: 1, min_tokens: 50 } })
    ).json();
    t.ok(compact.applied, 'old tool output compacted');
    t.same(violationsOf(format, compact.messages), []);
    t.same(schemaErrors(format, compact.messages), []);
    const expand = (await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: compact.messages } })).json();
    t.equal(JSON.stringify(expand.messages), JSON.stringify(messages), 'expand restores byte-exact');
    if (format === 'gemini') {
      t.equal(compact.messages[1].parts[1].thoughtSignature, 'c2lnbmF0dXJlLWEx', 'signatures stay on their parts');
      t.same(compact.messages[5], messages[5], 'the current turn is untouched');
    } else {
      t.same(compact.messages[2], messages[2], 'reasoning items are never edited');
    }
  });
}

t.test('openai-responses: reasoning stays with its response under a window', async (t) => {
  const app = await build(t);
  const res = (
    await app.inject({
      method: 'POST',
      url: '/v1/window',
      payload: { messages: responsesParallel, keep: { messages: 5 }, keep_first_user: false },
    })
  ).json();
  const types = res.messages.map((m: { type?: string }) => m.type ?? 'message');
  const r = types.indexOf('reasoning');
  if (r >= 0) t.equal(types[r + 1], 'function_call', 'a kept reasoning item is followed by its call');
  t.same(violationsOf('openai-responses', res.messages), []);
});

const problem = async (app: Awaited<ReturnType<typeof build>>, url: string, payload: unknown) => {
  const res = await app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> });
  return {
    status: res.statusCode,
    body: res.json() as { code?: string; errors?: { path: string; message: string }[]; warnings?: { code: string }[] },
  };
};

t.test('bad input, per format', async (t) => {
  const app = await build(t);
  const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] };
  const call = { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' };
  const cases: [string, unknown[], number, string, string?][] = [
    [
      'responses: output with no call',
      [user, { type: 'function_call_output', call_id: 'nope', output: 'x' }],
      400,
      'CMP_ERR_HISTORY_STRUCTURE',
      'messages[1]',
    ],
    [
      'responses: mismatched ids',
      [user, call, { type: 'function_call_output', call_id: 'c2', output: 'x' }, user],
      400,
      'CMP_ERR_HISTORY_STRUCTURE',
      'messages[1]',
    ],
    [
      'responses: a reasoning item alone',
      [user, { type: 'reasoning', id: 'rs', summary: [] }, user],
      400,
      'CMP_ERR_HISTORY_STRUCTURE',
      'messages[1]',
    ],
    [
      'responses: call without call_id',
      [user, { type: 'function_call', name: 'f', arguments: '{}' }],
      400,
      'CMP_ERR_HISTORY_MALFORMED',
      'messages[1].call_id',
    ],
    [
      'responses: chat part in a typed message',
      [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'x' }] }],
      400,
      'CMP_ERR_HISTORY_MALFORMED',
      'messages[0].content[0].type',
    ],
    [
      'mixed: chat tool message and responses items',
      [user, call, { role: 'tool', tool_call_id: 'c1', content: 'x' }],
      400,
      'CMP_ERR_FORMAT_MIXED',
      'messages[2]',
    ],
    [
      'gemini: response with no call',
      [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] },
      ],
      400,
      'CMP_ERR_HISTORY_STRUCTURE',
      'messages[1]',
    ],
    [
      'gemini: mismatched ids',
      [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'model', parts: [{ functionCall: { id: 'a', name: 'f', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { id: 'b', name: 'f', response: {} } }] },
      ],
      400,
      'CMP_ERR_HISTORY_STRUCTURE',
    ],
    [
      'gemini: role assistant',
      [{ role: 'assistant', parts: [{ text: 'x' }] }],
      400,
      'CMP_ERR_HISTORY_MALFORMED',
      'messages[0].role',
    ],
    ['gemini: empty parts', [{ role: 'user', parts: [] }], 400, 'CMP_ERR_HISTORY_MALFORMED', 'messages[0].parts'],
    [
      'gemini: two data fields in one part',
      [{ role: 'user', parts: [{ text: 'a', inlineData: { mimeType: 'image/png', data: 'AA==' } }] }],
      400,
      'CMP_ERR_HISTORY_MALFORMED',
      'messages[0].parts[0]',
    ],
    [
      'gemini: function call from the user',
      [{ role: 'user', parts: [{ functionCall: { name: 'f' } }] }],
      400,
      'CMP_ERR_HISTORY_MALFORMED',
    ],
    [
      'mixed: gemini content and anthropic message',
      [
        { role: 'user', parts: [{ text: 'x' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
      ],
      400,
      'CMP_ERR_FORMAT_MIXED',
      'messages[1]',
    ],
  ];
  for (const [name, messages, status, code, path] of cases) {
    const { status: got, body } = await problem(app, '/v1/window', { messages });
    t.equal(got, status, `${name}: status`);
    t.equal(body.code, code, `${name}: code`);
    if (path) t.equal(body.errors?.[0]?.path, path, `${name}: path`);
  }
  const unknown = await problem(app, '/v1/window', {
    messages: [user, { type: 'brand_new_item', data: { x: 1 } }, user],
    keep: { runs: 1 },
  });
  t.equal(unknown.status, 200, 'an unknown item type is accepted');
  t.equal(unknown.body.warnings?.[0]?.code, 'unknown_item_type', 'and reported');
  const validate = await problem(app, '/v1/validate', { messages: [user, { type: 'reasoning', id: 'rs', summary: [] }, user] });
  t.equal(validate.status, 200);
  t.match(validate.body, { valid: false, violations: [{ index: 1, rule: 'orphan_reasoning' }] });
});
