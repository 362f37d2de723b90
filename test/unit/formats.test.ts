import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { detectFormat } from '../../src/formats/detect.js';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { buildGroups, runStarts } from '../../src/history/groups.js';

const adapterOf = (name: string) => formatByName(name) as FormatAdapter;
const anthropic = adapterOf('anthropic');
const openaiChat = adapterOf('openai-chat');

const code = (fn: () => unknown): string => {
  try {
    fn();
    return 'none';
  } catch (error) {
    return error instanceof CompactorError ? error.code : String(error);
  }
};

t.test('detection from shape', async (t) => {
  t.equal(detectFormat([{ role: 'user', content: 'hi' }]).name, 'openai-chat', 'plain text reads as openai-chat');
  t.equal(
    detectFormat([
      { role: 'system', content: 's' },
      { role: 'user', content: 'hi' },
    ]).name,
    'openai-chat',
  );
  t.equal(
    detectFormat([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: {} }] },
    ]).name,
    'anthropic',
  );
  t.equal(detectFormat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]).name, 'openai-chat', 'text parts are shared');
  t.equal(
    code(() =>
      detectFormat([
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] },
      ]),
    ),
    'CMP_ERR_FORMAT_MIXED',
  );
  t.equal(
    code(() => detectFormat([42])),
    'CMP_ERR_HISTORY_MALFORMED',
    'a number is malformed',
  );
  t.equal(
    code(() => detectFormat([{ role: 'robot', content: 'x' }])),
    'CMP_ERR_HISTORY_MALFORMED',
    'unknown role named',
  );
  t.equal(detectFormat([{ parts: [{ text: 'x' }], role: 'model' }]).name, 'gemini', '`parts` is Gemini');
  t.equal(
    code(() =>
      detectFormat([{ parts: [{ text: 'x' }], role: 'assistant' }]).parse([{ parts: [{ text: 'x' }], role: 'assistant' }]),
    ),
    'CMP_ERR_HISTORY_MALFORMED',
    'a wrong Gemini role is named',
  );
  t.equal(
    detectFormat([{ type: 'function_call_output', call_id: 'a', output: 'x' }]).name,
    'openai-responses',
    'typed items are Responses',
  );
  t.equal(
    detectFormat([{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }]).name,
    'openai-responses',
    'Responses content parts',
  );
  t.equal(
    detectFormat([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'yo' },
    ]).name,
    'openai-chat',
    'plain text stays Chat',
  );
});

t.test('openai-chat parsing and rules', async (t) => {
  const { items } = openaiChat.parse([
    { role: 'developer', content: 'rules' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image_url', image_url: { url: 'https://x/y.png' } },
      ],
    },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
        { id: 'b', type: 'custom', custom: { name: 'g', input: 'raw' } },
      ],
    },
    { role: 'tool', tool_call_id: 'b', content: 'B' },
    { role: 'tool', tool_call_id: 'a', content: 'A' },
    { role: 'assistant', content: 'calling', function_call: { name: 'old', arguments: '{}' } },
    { role: 'function', name: 'old', content: 'done' },
    { role: 'assistant', content: 'ok', reasoning_content: 'thought' },
  ]);
  t.same(
    items.map((i) => i.role),
    ['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'assistant'],
  );
  t.same(openaiChat.violations(items), [], 'parallel results in any order, legacy function_call paired');
  t.ok(items[7]?.thinking, 'reasoning_content is thinking');
  const groups = buildGroups(items);
  t.same(
    groups.map((g) => [g.kind, g.start, g.end]),
    [
      ['head', 0, 1],
      ['user', 1, 2],
      ['tool_exchange', 2, 5],
      ['tool_exchange', 5, 7],
      ['assistant', 7, 8],
    ],
  );

  const orphan = openaiChat.violations(
    openaiChat.parse([
      { role: 'user', content: 'x' },
      { role: 'tool', tool_call_id: 'z', content: 'r' },
    ]).items,
  );
  t.same(
    orphan.map((v) => v.rule),
    ['orphan_tool_result'],
  );
  const unanswered = openaiChat.parse([
    { role: 'user', content: 'x' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    { role: 'user', content: 'y' },
  ]).items;
  t.same(
    openaiChat.violations(unanswered).map((v) => v.rule),
    ['unanswered_tool_call'],
  );
  t.same(openaiChat.violations(unanswered.slice(0, 2)), [], 'a trailing unanswered call is in flight');
  t.equal(buildGroups(unanswered.slice(0, 2))[1]?.kind, 'in_flight');
  t.same(
    openaiChat.violations(openaiChat.parse([{ role: 'assistant', content: null }]).items).map((v) => v.rule),
    ['empty_assistant'],
  );
  t.equal(
    code(() => openaiChat.parse([{ role: 'tool', content: 'x' }])),
    'CMP_ERR_HISTORY_MALFORMED',
  );
  t.equal(
    code(() => openaiChat.parse([{ role: 'assistant', tool_calls: [{ id: 1, function: { name: 'f', arguments: '{}' } }] }])),
    'CMP_ERR_HISTORY_MALFORMED',
  );
  const warned = openaiChat.parse([{ role: 'user', content: [{ type: 'video_url', video_url: {} }] }]);
  t.equal(warned.warnings[0]?.code, 'unknown_part_type', 'an unknown part is kept and reported');
});

t.test('anthropic parsing and rules', async (t) => {
  const history = [
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 't', signature: 'sig' },
        { type: 'server_tool_use', id: 'srv1', name: 'web_search', input: { query: 'q' } },
        { type: 'web_search_tool_result', tool_use_id: 'srv1', content: [] },
        { type: 'tool_use', id: 'tu1', name: 'read', input: {} },
        { type: 'tool_use', id: 'tu2', name: 'read', input: {} },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'tu2', content: [{ type: 'text', text: 'two' }] },
        { type: 'tool_result', tool_use_id: 'tu1', content: 'one', is_error: true },
        { type: 'text', text: 'and also this' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'redacted_thinking', data: 'xx' },
        { type: 'text', text: 'done' },
      ],
    },
  ];
  const { items } = anthropic.parse(history);
  t.same(anthropic.violations(items), []);
  t.notOk(items[2]?.userTurn, 'a tool_result carrier is not a user turn');
  t.same(
    buildGroups(items).map((g) => g.kind),
    ['user', 'tool_exchange', 'assistant'],
  );
  const rules = (messages: unknown[]) => anthropic.violations(anthropic.parse(messages).items).map((v) => v.rule);
  t.same(rules([{ role: 'assistant', content: 'x' }]), ['must_start_with_user']);
  t.same(
    rules([
      { role: 'user', content: 'x' },
      { role: 'user', content: 'y' },
    ]),
    ['roles_must_alternate'],
  );
  t.same(
    rules([
      { role: 'user', content: 'x' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'first' },
          { type: 'tool_result', tool_use_id: 'a', content: 'r' },
        ],
      },
    ]),
    ['tool_results_first'],
  );
  t.same(
    rules([
      { role: 'user', content: 'x' },
      { role: 'assistant', content: [{ type: 'web_search_tool_result', tool_use_id: 'nope', content: [] }] },
    ]),
    ['orphan_server_tool_result'],
  );
  t.same(
    rules([
      { role: 'user', content: '' },
      { role: 'assistant', content: 'x' },
    ]),
    ['empty_content'],
  );
  t.equal(
    code(() => anthropic.parse([{ role: 'system', content: 'x' }])),
    'CMP_ERR_HISTORY_MALFORMED',
  );
  t.equal(
    code(() => anthropic.parse([{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] }])),
    'CMP_ERR_HISTORY_MALFORMED',
    'thinking needs its signature',
  );
  t.equal(
    code(() => anthropic.parse([{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }])),
    'CMP_ERR_HISTORY_MALFORMED',
    'tool_use belongs to the assistant',
  );
});

t.test('runs: from run_ids or user turns', async (t) => {
  const { items } = openaiChat.parse([
    { role: 'system', content: 's' },
    { role: 'user', content: 'a' },
    { role: 'assistant', content: 'b' },
    { role: 'user', content: 'c' },
    { role: 'assistant', content: 'd' },
  ]);
  t.same(runStarts(items, 1), [1, 3]);
  t.same(runStarts(items, 1, ['x', 'r1', 'r1', 'r1', 'r2']), [1, 4]);
  t.same(runStarts(items, 1, ['x', 'r1', 'r2', 'r1', 'r1']), [1, 2, 3], 'a run id that reappears starts a new run');
});

t.test("each format's foreign shapes are the others' own declarations", async (t) => {
  const { foreignTo } = await import('../../src/formats/shapes.js');
  const chat = { keys: ['content', 'tool_calls'], types: ['text', 'image_url'] };
  const blocks = { keys: ['content'], types: ['text', 'tool_use'] };
  const parts = { keys: ['parts'], types: [] };
  const newcomer = { keys: ['frames'], types: ['frame'] };
  const all = [chat, blocks, parts, newcomer];
  const f = foreignTo(chat, all);
  t.same([...f.keys].sort(), ['frames', 'parts'], 'a key shared with another format is not foreign');
  t.same([...f.types].sort(), ['frame', 'tool_use'], 'neither is a shared part type');
  t.ok(foreignTo(parts, all).keys.has('content'), 'every other format’s keys are foreign to one that declares none of them');
  t.ok(
    foreignTo(blocks, all).types.has('frame'),
    'a new format’s shapes become foreign to every other one, with no edit to them',
  );
});
