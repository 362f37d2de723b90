/**
 * `clear_thinking` counts turns as the providers do: a turn is everything after a real user
 * message, so a tool-use loop (assistant, results, assistant, …) is one assistant turn, and the
 * turn in progress keeps its thinking (Anthropic requires the loop's first assistant message to
 * start with its thinking block).
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
