import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t from 'tap';
import { parseJsonBody, parseJsonBytes } from '../../src/service/request-body.js';
import { tagOf } from '../../src/tokens/content-tag.js';
import { loadCorpus } from '../support/corpus.js';

/** What a parse gives: the value, or the refusal's code and detail. */
function outcome(parse: () => unknown): unknown {
  try {
    return { value: parse() };
  } catch (error) {
    const e = error as { code?: string; message: string; name: string };
    return { error: e.name, code: e.code, message: e.message };
  }
}

/** `parseJsonBytes` gives what `parseJsonBody` of the bytes' UTF-8 text gives, value or refusal. */
function same(bytes: Buffer): boolean {
  const a = outcome(() => parseJsonBytes(bytes));
  const b = outcome(() => parseJsonBody(bytes.toString('utf8')));
  return isDeepStrictEqual(a, b) && JSON.stringify(a) === JSON.stringify(b);
}

t.test('every corpus transcript, as a body, parses to the same value', async (t) => {
  for (const transcript of loadCorpus()) {
    const bytes = Buffer.from(JSON.stringify({ messages: transcript.messages }));
    t.ok(same(bytes), transcript.file);
  }
});

t.test("a body's messages are tagged as parseJsonBody tags them from the same bytes", async (t) => {
  for (const transcript of loadCorpus()) {
    const bytes = Buffer.from(JSON.stringify({ messages: transcript.messages }));
    const fast = (parseJsonBytes(bytes) as { messages: unknown[] }).messages.map(tagOf);
    const text = (parseJsonBody(bytes.toString('utf8'), bytes) as { messages: unknown[] }).messages.map(tagOf);
    t.ok(
      fast.every((x) => x !== undefined),
      `${transcript.file}: every message tagged`,
    );
    t.same(fast, text, `${transcript.file}: the same tags`);
  }
});

t.test('bodies with non-ASCII text, escapes, backslashes, BOMs and forbidden keys parse or are refused alike', async (t) => {
  const cases = [
    '',
    '   ',
    '\u3000',
    '\ufeff{"a":1}',
    '{"a":"é"}',
    '{"a":"\\é"}',
    '{"a":"\\\\é"}',
    '{"a":"\\u00é"}',
    '{"é":1}',
    '{"a":1}é',
    'é{"a":1}',
    '{"a":"😀 ok ✓ 𝄞"}',
    '{"a":"\u2028\u2029"}',
    '{"__proto__":{"x":1}}',
    '{"a":"é","__proto__":{"x":1}}',
    '{"\\u005f_proto__":{"x":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '{"a":"é","constructor":{"prototype":1}}',
    '{"constructor":"é"}',
    '{"a":[1,{"b":[{"__proto__":null}]}]}',
    '[{"constructor":{"prototype":null}}]',
    '{"constructor":{"prototype":1,"x":"é"}}',
    '{"constructor":null,"prototype":{}}',
    '{"constructor":[{"prototype":1}]}',
    '{"a":{"constructor":{"x":{"prototype":1}}}}',
    '{"\\u0063onstructor":{"\\u0070rototype":1}}',
    '{"a":"__proto__","b":"constructor"}',
    '{"a":"\\u0041"}',
    `{"a":"${'x'.repeat(5000)}é${'y'.repeat(5000)}ü"}`,
    `{"a":"${'x'.repeat(4095)}éé"}`,
    '[1,2,"é"',
    '{"a":"é"',
  ];
  // Named in ASCII: a line separator in a name would end the TAP line.
  const name = (text: string) =>
    JSON.stringify(text)
      .slice(0, 60)
      .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const text of cases) t.ok(same(Buffer.from(text)), name(text));
  // Invalid UTF-8: lone continuation bytes, a truncated sequence, an overlong form, a surrogate.
  for (const raw of [[0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98]]) {
    const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from(raw), Buffer.from('x"}')]);
    t.ok(same(bytes), raw.join(','));
  }
});

t.test('any JSON value, and any text of JSON-ish characters, parses or is refused alike', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => same(Buffer.from(JSON.stringify(value)))),
    { numRuns: 300 },
  );
  const unit = fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '\\', 'u', '0', '5', 'f', 'é', '😀', ' ', 'a', '_', '\ufeff');
  fc.assert(
    fc.property(fc.string({ unit, maxLength: 40 }), (text) => same(Buffer.from(text))),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 30 }), (raw) =>
      same(Buffer.concat([Buffer.from('{"a":"'), Buffer.from(raw), Buffer.from('"}')])),
    ),
    { numRuns: 2000 },
  );
  // Objects whose keys are often the forbidden ones, at any depth, in arrays or not.
  const key = fc.constantFrom('__proto__', 'constructor', 'prototype', 'a', '\\u005f_proto__', 'constructo\\u0072');
  const { tree } = fc.letrec<{ tree: string }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom('1', 'null', '"x"', '"é"'),
      fc.array(tie('tree'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
      fc
        .array(fc.tuple(key, tie('tree')), { maxLength: 3 })
        .map((pairs) => `{${pairs.map(([k, v]) => `"${k}":${v}`).join(',')}}`),
    ),
  }));
  fc.assert(
    fc.property(tree, (text) => same(Buffer.from(text))),
    { numRuns: 2000 },
  );
  t.pass('no difference');
});
