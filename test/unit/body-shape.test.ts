import t from 'tap';
import { BodyShape } from '../../src/body-shape.js';

/** What the scanner must find, computed from the parsed value. */
function expected(value: unknown): { containers: number; messages: number; messagesKey: string; blocks: number } {
  let containers = 0;
  const walk = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    containers++;
    for (const child of Array.isArray(v) ? v : Object.values(v)) walk(child);
  };
  walk(value);
  let messages = 0;
  let messagesKey = '';
  let blocks = 0;
  const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (!Array.isArray(child)) continue;
      // Items of the arrays that are values of an object item: content parts and tool calls.
      for (const item of child.filter((c) => isObject(c) && !Array.isArray(c)))
        for (const inner of Object.values(item)) if (Array.isArray(inner)) blocks += inner.filter(isObject).length;
      const items = child.filter((c) => typeof c === 'object' && c !== null).length;
      if (items > messages) {
        messages = items;
        // As written in the body: JSON escapes kept.
        messagesKey = JSON.stringify(key).slice(1, -1);
      }
    }
  }
  return { containers, messages, messagesKey, blocks };
}

function scan(text: string, chunk: number): BodyShape {
  const bytes = Buffer.from(text);
  const shape = new BodyShape();
  for (let i = 0; i < bytes.length; i += chunk) shape.feed(bytes.subarray(i, i + chunk));
  return shape;
}

const tricky = [
  'a "quoted" {brace} [bracket] \\ backslash',
  '\\"',
  '\\\\',
  'ends with backslash \\',
  '{"role":"user"}',
  'ünïcödé 日本語 🎉',
  '\u0000\n\t',
  // Runs of backslashes before a quote, odd and even once escaped (the scanner skips string contents to the next quote).
  '\\"\\\\"\\\\\\"]',
  'x\\\\\\\\',
];

t.test('objects, arrays and the largest top-level array are counted as the parser sees them, at any chunk size', async (t) => {
  const bodies: unknown[] = [
    { messages: [{ role: 'user', content: 'hi' }], keep: { messages: 2 } },
    { model: 'gpt-4o', messages: tricky.map((content) => ({ role: 'user', content })), tools: [{ a: 1 }] },
    { contents: [{ role: 'user', parts: [{ text: '}]{[' }, { text: '"' }] }], system: [{ text: 'x' }, { text: 'y' }] },
    { input: [[1], [2], [3]], '{"fake":[': tricky, 'quote"key': [{}, {}] },
    [{ messages: [{}, {}] }],
    { messages: [] },
    { 'a\\"b': [{}, {}, {}], messages: [{ content: [{ type: 'text', text: tricky.join('') }] }] },
    {
      messages: [
        { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { arguments: '{"x":[1]}' } }, { id: 'b' }] },
        { role: 'user', content: [{ type: 'tool_result', content: [{ type: 'text', text: ']' }] }, 'x', [1]] },
        [[{}], {}],
      ],
      tools: [{ function: { parameters: { enum: [{}] } } }],
      contents: [{ parts: [{ functionCall: { args: {} } }, {}, {}] }],
    },
  ];
  for (const body of bodies) {
    const text = JSON.stringify(body);
    for (const chunk of [1, 2, 3, 7, 64, text.length]) {
      const shape = scan(text, chunk);
      const want = expected(body);
      t.same(
        { containers: shape.containers, messages: shape.messages, messagesKey: shape.messagesKey, blocks: shape.blocks },
        want,
        `${text.slice(0, 40)}… in chunks of ${chunk}`,
      );
    }
  }
});

t.test('a million tiny messages are counted without holding them', async (t) => {
  const parts = ['{"messages":['];
  for (let i = 0; i < 1_000_000; i++) parts.push(i ? ',{"role":"user","content":"x"}' : '{"role":"user","content":"x"}');
  parts.push(']}');
  const shape = scan(parts.join(''), 65_536);
  t.equal(shape.messages, 1_000_000);
  t.equal(shape.messagesKey, 'messages');
  t.equal(shape.containers, 1_000_002);
});
