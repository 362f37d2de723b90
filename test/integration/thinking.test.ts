/**
 * `clear_thinking` counts turns as the providers do: a turn is everything after a real user
 * message, so a tool-use loop (assistant, results, assistant, …) is one assistant turn, and the
 * turn in progress keeps its thinking (Anthropic requires the loop's first assistant message to
 * start with its thinking block). OpenAI Responses reasoning items go whole, and only where no
 * item of their response names them by id; what stays is reported.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../support/app.js';
import { violationsOf } from '../support/invariants.js';

const post = async (app: FastifyInstance, url: string, payload: Record<string, unknown>) => {
  const res = await app.inject({ method: 'POST', url, payload });
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return res.json();
};

type Fmt = 'anthropic' | 'gemini' | 'openai-chat';

/** One format's way of writing the messages of a thinking tool loop. */
interface Writer {
  user(text: string): unknown;
  /** An assistant message with thinking, then text or a tool call. */
  assistant(thought: string, call?: string): unknown;
  result(call: string): unknown;
  /** Whether a message still carries its thinking. */
  thinks(message: unknown): boolean;
}

const out = (call: string) => `output of ${call}\n${'a line of output\n'.repeat(20)}`;
const WRITERS: Record<Fmt, Writer> = {
  anthropic: {
    user: (text) => ({ role: 'user', content: text }),
    assistant: (thought, call) => ({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: thought, signature: `sig-${thought}` },
        call ? { type: 'tool_use', id: call, name: 'bash', input: { command: `run ${call}` } } : { type: 'text', text: 'Done.' },
      ],
    }),
    result: (call) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call, content: out(call) }] }),
    thinks: (m) => JSON.stringify(m).includes('"type":"thinking"'),
  },
  gemini: {
    user: (text) => ({ role: 'user', parts: [{ text }] }),
    assistant: (thought, call) => ({
      role: 'model',
      parts: [
        { text: thought, thought: true },
        call ? { functionCall: { id: call, name: 'bash', args: { command: `run ${call}` } } } : { text: 'Done.' },
      ],
    }),
    result: (call) => ({
      role: 'user',
      parts: [{ functionResponse: { id: call, name: 'bash', response: { output: out(call) } } }],
    }),
    thinks: (m) => JSON.stringify(m).includes('"thought":true'),
  },
  'openai-chat': {
    user: (text) => ({ role: 'user', content: text }),
    assistant: (thought, call) =>
      call
        ? {
            role: 'assistant',
            content: null,
            reasoning_content: thought,
            tool_calls: [{ id: call, type: 'function', function: { name: 'bash', arguments: `{"command":"run ${call}"}` } }],
          }
        : { role: 'assistant', content: 'Done.', reasoning_content: thought },
    result: (call) => ({ role: 'tool', tool_call_id: call, content: out(call) }),
    thinks: (m) => JSON.stringify(m).includes('reasoning_content'),
  },
};

/** A finished turn, then a tool loop in progress: messages 2–8 are one turn. */
function loop(w: Writer): unknown[] {
  return [
    w.user('Earlier task.'),
    w.assistant('earlier thought'),
    w.user('Fix the failing test.'),
    w.assistant('first thought', 'c1'),
    w.result('c1'),
    w.assistant('second thought', 'c2'),
    w.result('c2'),
    w.assistant('third thought', 'c3'),
    w.result('c3'),
  ];
}

for (const format of Object.keys(WRITERS) as Fmt[]) {
  const w = WRITERS[format];
  t.test(`${format}: the tool loop in progress is one turn and keeps its thinking`, async (t) => {
    const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
    const messages = loop(w);
    for (const keepTurns of [1, 0]) {
      const body = await post(app, '/v1/compact', {
        messages,
        format,
        keep_tool_uses: 9,
        clear_thinking: { keep_turns: keepTurns },
      });
      const name = `keep_turns ${keepTurns}`;
      t.same(violationsOf(format, body.messages), [], name);
      t.notOk(w.thinks(body.messages[1]), `${name}: the finished turn loses its thinking`);
      t.equal(body.actions[1].action, 'rewrite');
      for (const i of [3, 5, 7]) t.same(body.messages[i], messages[i], `${name}: message ${i} of the loop is untouched`);
      t.equal(
        body.warnings.some((x: { code: string }) => x.code === 'thinking_kept'),
        keepTurns === 0,
        `${name}: a warning says the turn in progress kept its thinking only when keep_turns asked otherwise`,
      );
    }
  });

  t.test(`${format}: a finished tool loop counts as one turn`, async (t) => {
    const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
    const messages = [...loop(w), w.assistant('closing thought'), w.user('Thanks. Next task.')];
    const one = await post(app, '/v1/compact', { messages, format, keep_tool_uses: 9, clear_thinking: { keep_turns: 1 } });
    t.same(violationsOf(format, one.messages), []);
    t.notOk(w.thinks(one.messages[1]), 'the older turn loses its thinking');
    for (const i of [3, 5, 7, 9]) t.same(one.messages[i], messages[i], `keep_turns 1: message ${i} of the newest turn untouched`);
    const none = await post(app, '/v1/compact', { messages, format, keep_tool_uses: 9, clear_thinking: { keep_turns: 0 } });
    t.same(violationsOf(format, none.messages), []);
    for (const i of [1, 3, 5, 7, 9]) t.notOk(w.thinks(none.messages[i]), `keep_turns 0: message ${i} loses its thinking`);
    t.notOk(
      none.warnings.some((x: { code: string }) => x.code === 'thinking_kept'),
      'no turn is in progress once the user spoke',
    );
  });
}

const rs = (n: string, id: boolean) => ({
  type: 'reasoning',
  ...(id ? { id: `rs_${n}` } : {}),
  summary: [{ type: 'summary_text', text: `reasoning ${n} ${'in some detail '.repeat(20)}` }],
  encrypted_content: `gAAAA${n}${'x'.repeat(400)}`,
});
const msg = (n: string, id: boolean) => ({
  type: 'message',
  role: 'assistant',
  ...(id ? { id: `msg_${n}` } : {}),
  content: [{ type: 'output_text', text: `answer ${n}`, annotations: [] }],
});
const fc = (n: string, id: boolean) => ({
  type: 'function_call',
  ...(id ? { id: `fc_${n}` } : {}),
  call_id: `call_${n}`,
  name: 'bash',
  arguments: `{"command":"run ${n}"}`,
});
const fco = (n: string) => ({ type: 'function_call_output', call_id: `call_${n}`, output: out(n) });
const responses = (ids: boolean) => [
  { role: 'user', content: 'Earlier task.' },
  rs('0', ids),
  msg('0', ids),
  { role: 'user', content: 'Fix the failing test.' },
  rs('1', ids),
  fc('1', ids),
  fco('1'),
  rs('2', ids),
  fc('2', ids),
  fco('2'),
];

t.test('openai-responses: old reasoning items go whole where nothing names them by id', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const messages = responses(false);
  const body = await post(app, '/v1/compact', { messages, keep_tool_uses: 9, clear_thinking: { keep_turns: 0 } });
  t.equal(body.format, 'openai-responses');
  t.same(violationsOf('openai-responses', body.messages), []);
  t.equal(body.actions[1].action, 'drop', 'the finished turn’s reasoning item is dropped');
  t.ok(body.actions[1].tokens_freed > 0);
  t.same(body.messages, [messages[0], ...messages.slice(2)], 'the loop in progress keeps its reasoning items');
  t.match(body.warnings, [{ code: 'thinking_kept', message: /turn in progress/ }]);
  t.ok(body.tokens.saved > 0);
  const again = await post(app, '/v1/compact', { messages: body.messages, keep_tool_uses: 9, clear_thinking: { keep_turns: 0 } });
  t.same(again.messages, body.messages, 'idempotent');
});

t.test('openai-responses: a reasoning item its response names by id stays, and the warning says why', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const messages = responses(true);
  const body = await post(app, '/v1/compact', { messages, keep_tool_uses: 9, clear_thinking: { keep_turns: 1 } });
  t.same(body.messages, messages, 'nothing removed');
  t.equal(body.applied, false);
  t.match(body.warnings, [{ code: 'thinking_kept', message: /1 reasoning item.*messages 1\b.*msg_0/ }]);
});

t.test('fit: compaction that drops reasoning items, then a summary: indexes are the input’s', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const turns = Array.from({ length: 8 }, (_, k) => [
    // The user types a line; the long part is the answer's (a summary keeps every user-typed message verbatim).
    { role: 'user', content: `Task ${k}.` },
    rs(`t${k}`, false),
    {
      ...msg(`t${k}`, false),
      content: [{ type: 'output_text', text: `answer t${k}: ${'details of the task '.repeat(30)}`, annotations: [] }],
    },
  ]).flat();
  const messages = [...turns, { role: 'user', content: 'Last task.' }];
  const body = await post(app, '/v1/fit', {
    messages,
    target_tokens: 300,
    compact: { clear_thinking: { keep_turns: 0 } },
    summarize: { keep: { messages: 2 } },
  });
  t.same(violationsOf('openai-responses', body.messages), []);
  t.equal(body.actions.length, messages.length);
  const range = body.artifacts.find((a: { kind: string }) => a.kind === 'summary_range');
  t.ok(range, 'a summarized range');
  t.equal(body.actions[range.message_index].action, 'summarize', 'its message_index is an input message it summarized');
  t.equal(range.message_index, 2, 'the first summarized input message (after the first task and its dropped reasoning item)');
});
