import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { detectFormat } from '../../src/formats/detect.js';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { buildGroups, runStarts } from '../../src/history/groups.js';

const adapterOf = (name: string) => formatByName(name) as FormatAdapter;
const anthropic = adapterOf('anthropic');
const openaiChat = adapterOf('openai-chat');
const openaiResponses = adapterOf('openai-responses');
const gemini = adapterOf('gemini');

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
  t.same(rules([{ role: 'system', content: 'x' }]), ['must_start_with_user'], 'a system message cannot come first');
  t.equal(
    code(() => anthropic.parse([{ role: 'developer', content: 'x' }])),
    'CMP_ERR_HISTORY_MALFORMED',
    'an unknown role is malformed',
  );
  t.equal(
    code(() => anthropic.parse([{ role: 'system', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }])),
    'CMP_ERR_HISTORY_MALFORMED',
    'a system message carries no tool traffic',
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

t.test(
  'anthropic mid-conversation system messages: placed as the Messages API places them, pinned to the turn they follow',
  async (t) => {
    const rules = (messages: unknown[]) => anthropic.violations(anthropic.parse(messages).items).map((v) => v.rule);
    const system = { role: 'system', content: '# Environment' };
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'Bash', input: {} }] };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'r' }] };
    const claudeCode = [{ role: 'user', content: 'task' }, system, call, result, system, { role: 'assistant', content: 'done' }];
    t.same(rules(claudeCode), [], 'after a user turn, after tool results, before an assistant turn');
    t.same(rules([{ role: 'user', content: 'task' }, system]), [], 'a system message may end the history');
    t.same(rules([{ role: 'user', content: 'x' }, system, { role: 'user', content: 'y' }]), ['system_message_placement']);
    t.same(rules([{ role: 'user', content: 'x' }, system, system, { role: 'assistant', content: 'y' }]), [
      'system_message_placement',
    ]);
    t.same(rules([{ role: 'user', content: 'x' }, { role: 'assistant', content: 'y' }, system]), ['system_message_placement']);
    t.same(rules([{ role: 'user', content: 'x' }, call, system, result]), [
      'unanswered_tool_call',
      'system_message_placement',
      'orphan_tool_result',
      'system_message_placement',
    ]);
    const server = {
      role: 'assistant',
      content: [
        { type: 'server_tool_use', id: 's1', name: 'web_search', input: {} },
        { type: 'web_search_tool_result', tool_use_id: 's1', content: [] },
      ],
    };
    t.same(
      rules([{ role: 'user', content: 'x' }, server, system, { role: 'assistant', content: 'y' }]),
      [],
      'after a server tool result',
    );
    t.same(
      rules([
        { role: 'user', content: 'x' },
        { role: 'system', output_config: { effort: 'low' } },
        { role: 'assistant', content: 'y' },
      ]),
      [],
      'a system message of output_config alone',
    );
    const { items } = anthropic.parse(claudeCode);
    t.same(
      items.map((it) => it.pinned === true),
      [false, true, false, false, true, false],
    );
    t.same(
      buildGroups(items).map((g) => [g.kind, g.start, g.end, g.pinned === true]),
      [
        ['user', 0, 2, true],
        ['tool_exchange', 2, 5, true],
        ['assistant', 5, 6, false],
      ],
      'each system message belongs to the group of the turn before it, which is then pinned',
    );
    const changes = {
      role: 'system',
      content: [
        { type: 'tool_addition', tool: { type: 'tool_reference', name: 'Grep' } },
        { type: 'tool_removal', tool: { type: 'tool_reference', name: 'Write' } },
        { type: 'text', text: 'Grep is available now.' },
      ],
    };
    const parsed = anthropic.parse([{ role: 'user', content: 'x' }, changes, { role: 'assistant', content: 'y' }]);
    t.same(parsed.warnings, [], 'tool changes are known blocks');
    t.match(
      anthropic.countable(changes).text,
      /tool_addition[\s\S]*Grep[\s\S]*Grep is available now/,
      'counted: the text and the tool changes',
    );
  },
);

t.test(
  'current block and item types are known; a new one is kept, counted, warned about and glued to its neighbours',
  async (t) => {
    const blocks = [
      { type: 'compaction', content: 'summary of earlier turns', encrypted_content: 'enc' },
      { type: 'mcp_tool_use', id: 'm1', name: 'fetch', server_name: 'web', input: {} },
      { type: 'mcp_tool_result', tool_use_id: 'm1', content: 'page' },
      { type: 'server_tool_use', id: 's1', name: 'advisor', input: {} },
      { type: 'advisor_tool_result', tool_use_id: 's1', content: { type: 'advisor_result', text: 'ok' } },
      { type: 'mcp_tool_listing', mcp_server_name: 'web', tools: [] },
      { type: 'fallback', from: { model: 'a' }, to: { model: 'b' } },
      { type: 'text', text: 'done' },
    ];
    const known = anthropic.parse([
      { role: 'user', content: 'x' },
      { role: 'assistant', content: blocks },
    ]);
    t.same(known.warnings, [], 'the SDK’s block types parse without warnings');
    t.same(anthropic.violations(known.items), []);
    const history = [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'a' },
      { role: 'user', content: [{ type: 'hologram', data: 'new' }] },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'y' },
    ];
    const unknown = anthropic.parse(history);
    t.equal(unknown.warnings[0]?.code, 'unknown_block_type');
    t.ok(unknown.items[2]?.sticky, 'the message is marked');
    t.match(anthropic.countable(history[2]).text, /hologram/, 'counted by its JSON');
    t.same(
      buildGroups(unknown.items).map((g) => [g.start, g.end]),
      [
        [0, 1],
        [1, 4],
        [4, 5],
      ],
      'no cut on either side of it',
    );
    const responses = openaiResponses.parse([
      { role: 'user', content: 'x' },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
      { type: 'quantum_call', id: 'q' },
      { type: 'function_call_output', call_id: 'c1', output: 'r' },
      { type: 'configuration_update', reasoning: { effort: 'low' } },
      { role: 'developer', content: 'later instruction' },
    ]);
    t.same(
      responses.warnings.map((w) => w.code),
      ['unknown_item_type'],
      'configuration_update is known; a new item type is warned about',
    );
    t.same(
      openaiResponses.violations(responses.items),
      [],
      'an unknown item between a call and its output does not break the pairing',
    );
    t.same(
      responses.items.map((it) => it.pinned === true),
      [false, false, false, false, true, true],
      'a configuration update and a later developer message are pinned',
    );
    const search = openaiResponses.parse([
      { role: 'user', content: 'x' },
      { type: 'tool_search_call', call_id: 'ts', execution: 'client', arguments: {} },
      { type: 'tool_search_output', call_id: 'ts', execution: 'client', tools: [] },
    ]);
    t.same([search.items[1]?.calls, search.items[2]?.results], [['ts'], ['ts']], 'a client tool search pairs by call_id');
    const gem = gemini.parse([
      { role: 'user', parts: [{ text: 'x' }] },
      { role: 'model', parts: [{ toolCall: { id: 't1', toolType: 'GOOGLE_SEARCH_WEB', args: {} } }] },
      { role: 'user', parts: [{ toolResponse: { id: 't1', response: {} } }, { hologram: {} }] },
      { role: 'model', parts: [{ functionCall: { id: 'f1', name: 'f', args: {} }, thoughtSignature: 'sig' }] },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'f1', name: 'f', parts: [{ inlineData: { mimeType: 'image/png', data: '' } }] } }],
      },
    ]);
    t.same(
      gem.warnings.map((w) => w.code),
      ['unknown_part_type'],
      'server tool parts are known; a part of no known kind is warned about, not refused',
    );
    t.same(gemini.violations(gem.items), []);
    t.ok(gem.items[1]?.sticky && gem.items[2]?.sticky, 'server tool parts keep their contents together');
    t.same(gem.items[4]?.results, ['f1'], 'a multimodal function response answers its call by id');
    t.equal(
      code(() => gemini.parse([{ role: 'user', parts: [{ thought: true }] }])),
      'CMP_ERR_HISTORY_MALFORMED',
      'a part with no data at all is still malformed',
    );
    const chat = openaiChat.parse([
      { role: 'system', content: 's' },
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'a' },
          { type: 'audio_summary', text: 'new' },
        ],
      },
      { role: 'developer', content: 'later' },
    ]);
    t.same(
      chat.warnings.map((w) => w.code),
      ['unknown_part_type'],
      'an unknown assistant part is kept, not refused',
    );
    t.same(
      chat.items.map((it) => it.pinned === true),
      [false, false, false, true],
      'the head is not pinned; a later developer message is',
    );
  },
);

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
