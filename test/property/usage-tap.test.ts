import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { TAIL, UsageTap } from '../../src/proxy/usage-tap.js';

/** One SSE event: a text delta (any text, quotes and the word usage included) or a usage report. */
const event = fc.oneof(
  fc.record({ kind: fc.constant('text' as const), text: fc.string({ unit: 'grapheme', maxLength: 40 }) }),
  fc.record({
    kind: fc.constant('usage' as const),
    usage: fc.dictionary(fc.constantFrom('input', 'output', 'cached'), fc.nat()),
  }),
  fc.record({ kind: fc.constant('none' as const) }),
);

const body = (e: { kind: string; text?: string; usage?: object }) =>
  e.kind === 'text'
    ? { type: 'content_block_delta', delta: { type: 'text_delta', text: `${e.text} "usage": {` } }
    : e.kind === 'usage'
      ? { type: 'message_delta', usage: e.usage }
      : { type: 'ping', usage: null };

t.test('the usage tap reads the same usage whatever the chunking and line ends of the stream', async () => {
  fc.assert(
    fc.property(
      fc.array(event, { maxLength: 30 }),
      fc.constantFrom('\n', '\r\n'),
      fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 8 }),
      (events, eol, sizes) => {
        const text = events.map((e) => `event: e${eol}data: ${JSON.stringify(body(e))}${eol}${eol}`).join('');
        const expected: Record<string, unknown> = {};
        for (const e of events) if (e.kind === 'usage') Object.assign(expected, e.usage);
        const bytes = Buffer.from(text);
        const tap = new UsageTap(true);
        for (let at = 0, i = 0; at < bytes.length; i++) {
          const size = sizes[i % sizes.length] as number;
          tap.write(bytes.subarray(at, at + size));
          at += size;
        }
        const found = events.some((e) => e.kind === 'usage') ? expected : undefined;
        assert.deepEqual(tap.end(), found);
      },
    ),
    { numRuns: 300 },
  );
});

t.test('an event far larger than the tail, cut anywhere, still gives its usage', async () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 * TAIL }), (cut) => {
      const text = `data: ${JSON.stringify({ response: { output: 'z'.repeat(2 * TAIL), usage: { total_tokens: 8 } } })}\n\n`;
      const bytes = Buffer.from(text);
      const tap = new UsageTap(true);
      tap.write(bytes.subarray(0, cut));
      tap.write(bytes.subarray(cut));
      assert.deepEqual(tap.end(), { total_tokens: 8 });
    }),
    { numRuns: 50 },
  );
});
