import t from 'tap';
import { PrefixCache, promptSegments, segmentPrefix, tokensOf } from '../support/provider/prefix-cache.js';
import { parseSse, sseFrame, sseJson } from '../support/provider/sse.js';
import { spliceText, textChunks, textLength, wholeText } from '../support/provider/text.js';

// The fake provider's pure pieces (test/support/fake-provider.ts): SSE framing, the prompt-cache
// simulation and the large-text generator.

t.test('sseFrame writes event and data lines and the blank line; parseSse reads them back', async (t) => {
  t.equal(sseFrame('{"a":1}', 'message_start'), 'event: message_start\ndata: {"a":1}\n\n');
  t.equal(sseFrame('[DONE]'), 'data: [DONE]\n\n');
  t.equal(sseFrame('one\ntwo\r\nthree'), 'data: one\ndata: two\ndata: three\n\n', 'a newline in data is a second data line');
  const text = sseJson({ type: 'ping' }, 'ping') + sseFrame('one\ntwo') + sseFrame('[DONE]');
  t.same(parseSse(text), [
    { event: 'ping', data: '{"type":"ping"}' },
    { event: undefined, data: 'one\ntwo' },
    { event: undefined, data: '[DONE]' },
  ]);
});

t.test(
  'parseSse follows the event-stream rules: CRLF and CR, comments, no-space values, unknown fields, the unfinished tail',
  async (t) => {
    const text =
      ': keep-alive\r\nevent:x\r\ndata:1\r\nid: 7\r\nretry: 10\r\n\r\ndata: 2\rdata:  3\r\r\n\nevent: lonely\n\ndata: cut';
    t.same(parseSse(text), [
      { event: 'x', data: '1' },
      { event: undefined, data: '2\n 3' },
    ]);
    t.same(parseSse('data\n\n'), [{ event: undefined, data: '' }], 'a field with no colon has an empty value');
    t.same(parseSse(''), []);
  },
);

t.test('promptSegments: tools, system, then each item, without cache_control markers', async (t) => {
  const marked = promptSegments([{ name: 'Bash' }], 'sys', [
    { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
  ]);
  const plain = promptSegments([{ name: 'Bash' }], 'sys', [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  t.same(marked, plain, 'moving a breakpoint does not change the prefix');
  t.same(plain, ['[{"name":"Bash"}]', '"sys"', '{"role":"user","content":[{"type":"text","text":"hi"}]}']);
  t.same(promptSegments(undefined, undefined, []), ['null', 'null']);
});

t.test('segmentPrefix: the common characters and the segment where the earlier prompt broke', async (t) => {
  t.same(segmentPrefix(['ab', 'cd'], ['ab', 'cd', 'ef']), { chars: 4, brokeAt: -1 }, 'growth breaks nothing');
  t.same(segmentPrefix(['ab', 'cd', 'ef'], ['ab', 'cx', 'ef']), { chars: 3, brokeAt: 1 }, 'a rewrite breaks at its segment');
  t.same(segmentPrefix(['ab', 'cd'], ['ab']), { chars: 2, brokeAt: 1 }, 'a shorter prompt breaks where it ends');
  t.same(segmentPrefix([], ['ab']), { chars: 0, brokeAt: -1 });
});

t.test('PrefixCache: per conversation, the longest prefix over the earlier prompts, bounded by depth', async (t) => {
  const cache = new PrefixCache(2);
  t.same(
    cache.observe('a', ['t', 's', 'u1']),
    { promptChars: 4, commonChars: 0, brokeAtSegment: -1 },
    'a first prompt reads nothing',
  );
  t.same(cache.observe('a', ['t', 's', 'u1', 'x1']), { promptChars: 6, commonChars: 4, brokeAtSegment: -1 });
  t.same(cache.observe('b', ['t', 's', 'u1']), { promptChars: 4, commonChars: 0, brokeAtSegment: -1 }, 'conversations are apart');
  t.same(
    cache.observe('a', ['t', 's', 'zz']),
    { promptChars: 4, commonChars: 2, brokeAtSegment: 2 },
    'a rewritten item breaks there',
  );
  t.same(
    cache.observe('a', ['t', 's', 'u1', 'x1', 'y']),
    { promptChars: 7, commonChars: 6, brokeAtSegment: -1 },
    'the best earlier prompt wins',
  );
  t.same(cache.observe('a', ['t', 's', 'u1']).commonChars, 4);
  t.same(cache.observe('a', ['t', 's', 'u1', 'x1']).commonChars, 6, 'depth 2: the best of the last two');
  cache.clear();
  t.equal(cache.observe('a', ['t', 's', 'u1']).commonChars, 0, 'cleared');
  t.equal(tokensOf(0), 0);
  t.equal(tokensOf(9), 3, 'characters / 4, rounded up');
});

t.test('text: strings stream in small pieces, a large text lazily in 16 KiB pieces of exactly its size', async (t) => {
  t.same(
    [...textChunks('a'.repeat(50))].map((p) => p.length),
    [24, 24, 2],
  );
  t.same([...textChunks('')], []);
  const large = { bytes: 100_000 };
  const pieces = [...textChunks(large)];
  t.equal(pieces.join('').length, 100_000);
  t.equal(pieces[0]?.length, 16 * 1024);
  t.match(pieces[0] ?? '', /^00000000 the quick brown fox/);
  t.equal(wholeText(large), pieces.join(''), 'deterministic');
  t.equal(textLength(large), 100_000);
  t.equal(wholeText({ bytes: 7, line: 'ab\n' }), 'ab\nab\na');
  // Lazy: the first piece of a terabyte comes at once.
  t.equal(textChunks({ bytes: 2 ** 40 }).next().value?.length, 16 * 1024);
});

t.test('spliceText writes a JSON value whose marker string is the text, escaped, in pieces', async (t) => {
  const text = 'line "one"\nline two\t\u0001';
  const json = [...spliceText({ a: 1, text: 'MARK', b: [2] }, 'MARK', text)].join('');
  t.same(JSON.parse(json), { a: 1, text, b: [2] });
  const large = [...spliceText({ text: 'MARK' }, 'MARK', { bytes: 40_000 })];
  t.ok(large.length > 3, 'in pieces');
  t.equal((JSON.parse(large.join('')) as { text: string }).text.length, 40_000);
  t.throws(() => [...spliceText({ text: 'x' }, 'MARK', 'y')], /marker not found/);
});
