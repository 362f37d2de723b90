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

/**
 * Offsets where a cut is most likely to break a reader: inside or right around every mention of
 * usage, every line end and every event boundary (each CR and LF, and the bytes beside them).
 */
function riskyCuts(bytes: Buffer): number[] {
  const cuts = new Set<number>();
  const text = bytes.toString('latin1');
  for (let i = text.indexOf('"usage'); i >= 0; i = text.indexOf('"usage', i + 1)) {
    for (let k = -1; k <= 7; k++) cuts.add(i + k);
  }
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 10 || bytes[i] === 13) for (let k = -1; k <= 2; k++) cuts.add(i + k);
  }
  return [...cuts].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b);
}

t.test('the usage tap reads the same usage whatever cuts are made where mentions and boundaries are', async () => {
  fc.assert(
    fc.property(
      fc.array(event, { minLength: 1, maxLength: 20 }),
      fc.constantFrom('\n', '\r\n', '\r'),
      fc.infiniteStream(fc.boolean()),
      (events, eol, picks) => {
        const text = events.map((e) => `event: e${eol}data: ${JSON.stringify(body(e))}${eol}${eol}`).join('');
        const bytes = Buffer.from(text);
        const cuts = riskyCuts(bytes).filter(() => picks.next().value);
        const tap = new UsageTap(true);
        let at = 0;
        for (const cut of [...cuts, bytes.length]) {
          tap.write(bytes.subarray(at, cut));
          at = cut;
        }
        const expected: Record<string, unknown> = {};
        for (const e of events) if (e.kind === 'usage') Object.assign(expected, e.usage);
        assert.deepEqual(tap.end(), events.some((e) => e.kind === 'usage') ? expected : undefined);
      },
    ),
    { numRuns: 400 },
  );
});

t.test('one byte at a time, and every risky cut at once, read the same usage as one write', async () => {
  fc.assert(
    fc.property(fc.array(event, { minLength: 1, maxLength: 12 }), fc.constantFrom('\n', '\r\n', '\r'), (events, eol) => {
      const bytes = Buffer.from(events.map((e) => `data: ${JSON.stringify(body(e))}${eol}${eol}`).join(''));
      const whole = new UsageTap(true);
      whole.write(bytes);
      const expected = whole.end();
      const single = new UsageTap(true);
      for (let i = 0; i < bytes.length; i++) single.write(bytes.subarray(i, i + 1));
      assert.deepEqual(single.end(), expected);
      const risky = new UsageTap(true);
      let at = 0;
      for (const cut of [...riskyCuts(bytes), bytes.length]) {
        risky.write(bytes.subarray(at, cut));
        at = cut;
      }
      assert.deepEqual(risky.end(), expected);
    }),
    { numRuns: 200 },
  );
});
