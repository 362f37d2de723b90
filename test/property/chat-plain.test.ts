import fc from 'fast-check';
import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';

/**
 * Chat Completions messages of the plain shape (text content, function calls) are read without
 * building the paths an error would name (issue 40); any other shape is checked field by field.
 * The plain reading must accept exactly what the checked one does and find the same pairs: a
 * message whose text content is written as one text part takes the checked path, and must read
 * the same (or be refused the same way), on messages with fields of any type.
 */
const chat = formatByName('openai-chat') as FormatAdapter;

const anyValue = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null), fc.constant(undefined), fc.boolean());
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 8, arbitrary: arb }, { weight: 1, arbitrary: anyValue });

const call = fc.record(
  {
    id: maybe(fc.string({ minLength: 1, maxLength: 4 })),
    type: fc.oneof(fc.constant('function'), fc.constant(undefined), anyValue),
    function: maybe(fc.record({ name: maybe(fc.string({ maxLength: 4 })), arguments: maybe(fc.string({ maxLength: 6 })) })),
  },
  { requiredKeys: ['id', 'function'] },
);

const message = fc.record(
  {
    role: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool') },
      { weight: 1, arbitrary: anyValue },
    ),
    content: fc.oneof({ weight: 5, arbitrary: fc.string({ maxLength: 5 }) }, { weight: 1, arbitrary: anyValue }),
    name: fc.oneof(
      { weight: 6, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: fc.string({ maxLength: 3 }) },
      { weight: 1, arbitrary: anyValue },
    ),
    tool_call_id: maybe(fc.string({ minLength: 1, maxLength: 4 })),
    tool_calls: fc.oneof(
      { weight: 3, arbitrary: fc.constant(undefined) },
      { weight: 3, arbitrary: fc.array(call, { maxLength: 3 }) },
      { weight: 1, arbitrary: anyValue },
    ),
    function_call: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyValue }),
    reasoning_content: anyValue,
  },
  { requiredKeys: ['role'] },
);

/** The same message with its text content written as one text part (read by the checked path). */
const asParts = (m: Record<string, unknown>): Record<string, unknown> =>
  typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m;

const reading = (messages: unknown[]): unknown => {
  try {
    const { items, warnings } = chat.parse(messages);
    return { items: items.map(({ original: _, ...item }) => item), warnings };
  } catch (error) {
    if (!(error instanceof CompactorError)) throw error;
    return { refused: error.code, message: error.message };
  }
};

t.test('a plain message reads as the checked path reads it, or is refused as it refuses it', async (t) => {
  let plain = 0;
  fc.assert(
    fc.property(fc.array(message, { minLength: 1, maxLength: 4 }), (messages) => {
      const got = reading(messages);
      if (!('refused' in (got as object))) plain++;
      t.same(got, reading(messages.map(asParts)));
    }),
    { numRuns: 500 },
  );
  t.ok(plain > 50, `histories read without refusal: ${plain}`);
});
