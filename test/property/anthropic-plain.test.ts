import fc from 'fast-check';
import t from 'tap';
import { type BlockScan, checkBlock, plainBlock } from '../../src/formats/anthropic-parse.js';
import type { Foreign } from '../../src/formats/shapes.js';
import type { Warning } from '../../src/history/types.js';

/**
 * Anthropic blocks of the common shapes are read without building the paths an error would name
 * (issue 40). The plain reading must accept only what the checked one accepts, and find what it
 * finds; a block it leaves is left untouched, for the checked reading. On blocks with fields of
 * any type, in every role.
 */
const anyValue = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null), fc.constant(undefined), fc.boolean());
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary: arb }, { weight: 1, arbitrary: anyValue });

const block = fc.record(
  {
    type: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'image') },
      { weight: 1, arbitrary: anyValue },
    ),
    text: maybe(fc.string({ maxLength: 4 })),
    id: maybe(fc.string({ minLength: 1, maxLength: 4 })),
    name: maybe(fc.string({ maxLength: 4 })),
    input: maybe(fc.dictionary(fc.string({ maxLength: 2 }), fc.string({ maxLength: 2 }), { maxKeys: 2 })),
    tool_use_id: maybe(fc.string({ minLength: 1, maxLength: 4 })),
    content: fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 3 }),
      fc.array(fc.oneof(fc.record({ type: maybe(fc.constant('text')), text: fc.string({ maxLength: 3 }) }), anyValue), {
        maxLength: 2,
      }),
      anyValue,
    ),
    is_error: fc.oneof(fc.constant(undefined), fc.boolean(), anyValue),
    thinking: maybe(fc.string({ maxLength: 4 })),
    signature: maybe(fc.string({ maxLength: 4 })),
  },
  { requiredKeys: ['type'] },
);

const emptyScan = (): BlockScan => ({ calls: [], results: [], thinking: false, unknown: false });

t.test('a block read plainly is one the checked reading accepts, with the same findings', async (t) => {
  const foreign: Foreign = { keys: new Set(), types: new Set() };
  let plain = 0;
  fc.assert(
    fc.property(block, fc.constantFrom('user', 'assistant', 'system'), (b, role) => {
      const fast = emptyScan();
      const read = plainBlock(b, role, fast);
      if (!read) {
        t.same(fast, emptyScan(), 'a block left to the checked reading changes nothing');
        return;
      }
      plain++;
      const checked = emptyScan();
      const warnings: Warning[] = [];
      t.doesNotThrow(() => checkBlock(b, 'at', role, checked, warnings, foreign));
      t.same(fast, checked);
      t.same(warnings, []);
    }),
    { numRuns: 1000 },
  );
  t.ok(plain > 100, `blocks read plainly: ${plain}`);
});
