import t from 'tap';
import { cutAt, longRuns } from '../../src/tokens/runs.js';

const runs = (text: string, min = 8) => {
  const pairs = longRuns(text, min);
  const out: string[] = [];
  for (let i = 0; i < pairs.length; i += 2) out.push(text.slice(pairs[i], pairs[i + 1]));
  return out;
};

t.test('runs of one kind, as the pre-tokenizers see them', async (t) => {
  t.same(runs('abc def'), [], 'ordinary text has no long run');
  t.same(runs(`x ${'a'.repeat(10)} y`), ['a'.repeat(10)], 'letters');
  t.same(runs(`x ${'日本語'.repeat(4)} y`), ['日本語'.repeat(4)], 'CJK letters');
  t.same(runs(`x ${'—.'.repeat(5)} y`), ['—.'.repeat(5)], 'a symbol and punctuation alternating');
  t.same(runs(`x ${'😀.'.repeat(5)} y`), ['😀.'.repeat(5)], 'emoji (surrogate pairs) and punctuation');
  t.same(runs(`x ${'\u0301.'.repeat(5)} y`), ['\u0301.'.repeat(5)], 'marks extend punctuation runs (cl100k)');
  t.same(runs(`x ${'a\u0301'.repeat(5)} y`), ['a\u0301'.repeat(5)], 'marks extend letter runs (o200k)');
  t.same(runs(`x ${'\n/'.repeat(5)} y`), ['\n/'.repeat(5)], "o200k's \\r\\n/ suffix");
  t.same(runs(`x${'\u3000 \u00a0'.repeat(4)}y`), ['\u3000 \u00a0'.repeat(4)], 'Unicode whitespace');
  t.same(runs(`x ${'1'.repeat(20)} ${'٣'.repeat(20)} y`), [], 'numbers are cut in threes by the pre-tokenizers');
  t.same(runs(`${'a'.repeat(10)}${'.'.repeat(10)}`), [`${'a'.repeat(10)}${'.'.repeat(10)}`], 'adjacent runs merge');
  t.same(runs('a'.repeat(7)), [], 'shorter than the minimum');
});

t.test('cuts never split a surrogate pair', async (t) => {
  const text = 'a😀b';
  t.equal(cutAt(text, 1), 1);
  t.equal(cutAt(text, 2), 3, 'inside the pair: after it');
  t.equal(cutAt(text, 3), 3);
});
