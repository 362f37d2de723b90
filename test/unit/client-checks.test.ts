import t from 'tap';
import {
  type CheckResult,
  type ClientReport,
  deepMerge,
  diffShapes,
  failureLines,
  firstDifference,
  historiesOf,
  keptProblems,
  resultTable,
  shapesOf,
} from '../support/clients.js';
import type { JsonObject, RecordedRequest } from '../support/fake-provider.js';

// The pure parts of test/support/clients.ts: the checks' comparisons, captured histories, shapes.

function recorded(
  json: RecordedRequest['json'],
  wire: RecordedRequest['wire'],
  headers: RecordedRequest['headers'] = {},
  url = '/v1/messages',
): RecordedRequest {
  return {
    seq: 0,
    method: 'POST',
    url,
    path: url,
    headers,
    raw: Buffer.from(''),
    json,
    wire,
    endpoint: 'model',
    receivedAt: 0,
    timing: { bodyMs: 0 },
  };
}

t.test('keptProblems: every kept message in the output, in order, as the same JSON text', async (t) => {
  const input = [
    { role: 'user', content: 'a' },
    { role: 'assistant', content: 'b' },
    { role: 'user', content: 'c' },
  ];
  const keepAll = input.map((_, index) => ({ index, action: 'keep' }));
  t.same(keptProblems(input, input, keepAll), []);
  t.same(
    keptProblems(
      input,
      [input[0] ?? null, { role: 'user', content: 'summary' }, input[2] ?? null],
      [keepAll[0] ?? null, { index: 1, action: 'summarize' }, keepAll[2] ?? null],
    ),
    [],
  );
  t.same(keptProblems(input, [input[0] ?? null, { role: 'assistant', content: 'B' }, input[2] ?? null], keepAll), [
    'messages[1] has action keep but is not in the output byte-identical',
  ]);
  t.same(
    keptProblems(
      input,
      [input[2] ?? null, input[0] ?? null],
      [keepAll[0] ?? null, { index: 1, action: 'drop' }, keepAll[2] ?? null],
    ),
    ['messages[2] has action keep but is not in the output byte-identical'],
    'order counts',
  );
  const reordered = [{ content: 'a', role: 'user' }, input[1] ?? null, input[2] ?? null];
  t.same(
    keptProblems(input, reordered, keepAll),
    ['messages[0] has action keep but is not in the output byte-identical'],
    'key order counts',
  );
  t.same(keptProblems(input, input, keepAll.slice(1)), ['actions has 2 entries for 3 messages']);
});

t.test('firstDifference names the first message that differs', async (t) => {
  t.equal(firstDifference([{ a: 1 }], [{ a: 1 }]), undefined);
  t.equal(firstDifference([{ a: 1 }, { b: 2 }], [{ a: 1 }, { b: 3 }]), 'messages[1] differs (2 messages expected, 2 returned)');
  t.equal(firstDifference([{ a: 1 }, { b: 2 }], [{ a: 1 }]), 'messages[1] differs (2 messages expected, 1 returned)');
});

t.test('historiesOf: the history with the body’s system prompt, tools and model as Compactor fields', async (t) => {
  const anthropic = recorded(
    { model: 'c', system: [{ type: 'text', text: 's' }], tools: [{ name: 'Bash' }], messages: [{ role: 'user', content: 'hi' }] },
    'anthropic',
  );
  const responses = recorded({ model: 'g', instructions: null, input: 'hello' }, 'openai-responses');
  const unparsed = recorded(undefined, undefined);
  const [a, r, ...rest] = historiesOf('codex', '1.0.0', [anthropic, responses, unparsed]);
  t.same(a, {
    client: 'codex',
    version: '1.0.0',
    request: 1,
    format: 'anthropic',
    messages: [{ role: 'user', content: 'hi' }],
    context: { system: [{ type: 'text', text: 's' }], tools: [{ name: 'Bash' }], model: 'c' },
  });
  t.same(r?.context, { model: 'g' }, 'a null instructions is no system prompt');
  t.same(r?.messages, [{ role: 'user', content: 'hello' }], 'a string input is one user message');
  t.same(rest, [], 'a body that did not parse is left out');
});

t.test(
  'shapesOf: endpoints, keys, roles, item and block types, tools, header names and feature values; diffShapes',
  async (t) => {
    const body: JsonObject = {
      model: 'm',
      tools: [{ name: 'Bash' }, { type: 'web_search_20250305', name: 'web_search' }],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'text', text: 'env', cache_control: {} }], output_config: {} },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'text', text: 'out' }] }] },
      ],
    };
    const headers = { 'anthropic-beta': 'a-1, b-2', 'x-api-key': 'sk-ant-secret', host: 'h', 'x-claude-code-session-id': 'uuid' };
    const shapes = shapesOf([recorded(body, 'anthropic', headers, '/v1/messages?beta=true')]);
    t.same(shapes.endpoints, ['POST /v1/messages?beta=true']);
    t.same(shapes.bodyKeys, ['messages', 'model', 'tools']);
    t.same(shapes.roles, ['system', 'user']);
    t.same(shapes.items, ['item-key:content', 'item-key:output_config', 'item-key:role']);
    t.ok(
      shapes.blocks.includes('block:string') &&
        shapes.blocks.includes('block:tool_result>text') &&
        shapes.blocks.includes('block-key:cache_control'),
    );
    t.same(shapes.tools, ['custom:Bash', 'web_search_20250305:web_search']);
    t.same(
      shapes.headers,
      ['anthropic-beta=a-1', 'anthropic-beta=b-2', 'x-api-key', 'x-claude-code-session-id'],
      'names only, but for feature headers',
    );
    t.notOk(JSON.stringify(shapes).includes('sk-ant-secret'), 'no header value but a feature’s');
    const gemini = shapesOf([
      recorded(
        {
          contents: [{ role: 'model', parts: [{ functionCall: { name: 'x' } }] }],
          tools: [{ functionDeclarations: [{ name: 'run' }] }],
        },
        'gemini',
      ),
    ]);
    t.same(gemini.blocks, ['block-key:functionCall', 'block:functionCall']);
    t.same(gemini.tools, ['function:run']);
    const later = { ...shapes, roles: ['user'], headers: [...shapes.headers, 'x-new'] };
    t.same(diffShapes(shapes, later), [
      { field: 'roles', added: [], removed: ['system'] },
      { field: 'headers', added: ['x-new'], removed: [] },
    ]);
    t.same(diffShapes(shapes, shapes), []);
  },
);

t.test('deepMerge merges objects key by key and replaces the rest', async (t) => {
  t.same(deepMerge({ a: { b: 1, c: [1] }, d: 1 }, { a: { c: [2], e: 3 }, d: { x: 1 } }), {
    a: { b: 1, c: [2], e: 3 },
    d: { x: 1 },
  });
});

t.test('resultTable and failureLines: a cell per endpoint, one line per distinct problem', async (t) => {
  const result = (request: number, endpoint: CheckResult['endpoint'], ok: boolean, status = 200): CheckResult => ({
    client: 'codex',
    version: '1',
    request,
    endpoint,
    label: `codex@1 request ${request} /v1/${endpoint}`,
    ok,
    status,
    applied: ok && request === 2,
    problems: ok ? [] : status === 200 ? ['the output is not valid: x'] : [`/v1/${endpoint}: HTTP 400: bad`],
  });
  const history = (request: number) => ({
    client: 'codex' as const,
    version: '1',
    request,
    format: 'openai-responses' as const,
    messages: [],
    context: {},
  });
  const report = {
    client: 'codex',
    version: '1',
    histories: [history(1), history(2)],
    results: [
      result(1, 'tokens', false, 400),
      result(1, 'window', false, 400),
      result(2, 'tokens', false, 400),
      result(2, 'window', true),
      result(2, 'fit', false),
    ],
  } as unknown as ClientReport;
  const table = resultTable(report).split('\n');
  t.match(table[0], /^request\s+items\s+tokens\s+validate\s+window\s+compact\s+summarize\s+fit$/);
  t.match(table[1], /^1\s+0\s+400\s+-\s+400\s+-\s+-\s+-$/);
  t.match(table[2], /^2\s+0\s+400\s+-\s+ok\*\s+-\s+-\s+FAIL$/);
  t.same(failureLines(report), [
    'codex@1 request 1 /v1/tokens, request 1 /v1/window, request 2 /v1/tokens: HTTP 400: bad',
    'codex@1 requests 2 × /v1/fit: the output is not valid: x',
  ]);
});
