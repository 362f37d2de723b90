import fc from 'fast-check';
import t from 'tap';
import {
  foldWords,
  MAX_WORD_CHARS,
  MAX_WORDS_CHARS,
  NO_WORDS,
  renderWords,
  splitWords,
  typedWords,
  USER_WORDS_HEADING,
  wordOf,
} from '../../src/summarizers/user-words.js';

const ID = `art_${'ab'.repeat(12)}`;

t.test('typed words: agent-injected context blocks are not the user’s', async (t) => {
  t.equal(typedWords('  fix the bug  '), 'fix the bug');
  t.equal(
    typedWords('<system-reminder>\nAs you answer, use this context.\n</system-reminder>\nthe config must stay YAML, never JSON'),
    'the config must stay YAML, never JSON',
    'a Claude Code reminder before the prompt',
  );
  t.equal(
    typedWords('<environment_context>\n  <cwd>/work</cwd>\n</environment_context>'),
    '',
    "Codex's environment: nothing typed",
  );
  t.equal(
    typedWords('# AGENTS.md instructions for /work\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>\n\nnow run it'),
    'now run it',
    "Codex's AGENTS.md block and its heading",
  );
  t.equal(
    typedWords('<command-name>/clear</command-name>\n<local-command-stdout>cleared</local-command-stdout>'),
    '',
    "Claude Code's command and its output",
  );
  t.equal(typedWords('use a <b>bold</b> title'), 'use a <b>bold</b> title', 'markup inside a sentence is the user’s');
  t.equal(typedWords('<div>\nunclosed'), '<div>\nunclosed', 'an element never closed is the user’s text');
  t.equal(typedWords('keep x < 3 and y > 2'), 'keep x < 3 and y > 2');
});

t.test('typed words: linear on hostile input', async (t) => {
  const many = Array.from({ length: 20_000 }, (_, i) => `<tag${i % 500}>`).join('\n');
  t.equal(typedWords(many), many, 'unclosed elements of many names stay text');
  const nested = `${'<a>\n'.repeat(50_000)}x`;
  t.equal(typedWords(nested), nested.trim());
});

t.test('a long message keeps its head and tail and names the artifact that holds it whole', async (t) => {
  const long = `START ${'x'.repeat(5000)} END`;
  const w = wordOf(long, ID);
  t.ok(w.text.startsWith('START '), 'head');
  t.ok(w.text.endsWith(' END'), 'tail');
  t.ok(w.text.length < MAX_WORD_CHARS + 100, 'bounded');
  t.same(w.cut, { of: long.length, id: ID });
  t.match(renderWords({ words: [w], leftOut: 0 }), `whole in ${ID}`);
  t.same(wordOf('short', ID), { text: 'short' });
});

t.test('rendered, the list reads back exactly; edited, it is prose', async (t) => {
  const list = {
    words: [{ text: 'do not touch the tests under tests/legacy; only change files in src/' }, wordOf('y'.repeat(3000), ID)],
    leftOut: 2,
  };
  const text = `Prose.\n\n## Artifact trail (compactor)\nread: a.py\n\n${renderWords(list)}`;
  const back = splitWords(text);
  t.same(back.list, list);
  t.equal(back.rest, 'Prose.\n\n## Artifact trail (compactor)\nread: a.py');
  t.same(splitWords(text.replace('tests/legacy', 'tests/legacx!')).list, NO_WORDS, 'a body of another length does not parse');
  t.same(splitWords('just prose').list, NO_WORDS);
  t.equal(renderWords(NO_WORDS), '');
});

t.test('property: any messages, whatever they hold (headings, trailers, newlines), round-trip', async (t) => {
  const piece = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.constantFrom(
      USER_WORDS_HEADING,
      "(the user's words above: 1 message, 10 chars)",
      '\n',
      '- user, 3 chars:',
      '## Artifact trail (compactor)',
    ),
  );
  const message = fc.array(piece, { minLength: 1, maxLength: 6 }).map((p) => p.join(''));
  fc.assert(
    fc.property(fc.array(message, { maxLength: 8 }), fc.string({ maxLength: 60 }), (messages, prose) => {
      const list = foldWords(
        NO_WORDS,
        messages.map((m) => wordOf(m, ID)),
      );
      const rendered = renderWords(list);
      const text = rendered ? `${prose}\n\n${rendered}` : prose;
      const back = splitWords(text);
      if (rendered) {
        t.same(back.list, list);
        t.equal(back.rest, prose.trimEnd());
      }
    }),
    { numRuns: 300 },
  );
});

t.test('a fold keeps the earlier words first, then the new ones, within the bound (oldest left out, counted)', async (t) => {
  const a = foldWords(NO_WORDS, [{ text: 'first' }, { text: 'second' }]);
  const b = foldWords(splitWords(`x\n\n${renderWords(a)}`).list, [{ text: 'third' }]);
  t.same(
    b.words.map((w) => w.text),
    ['first', 'second', 'third'],
  );
  const big = Array.from({ length: 30 }, (_, i) => ({ text: `${i} ${'z'.repeat(900)}` }));
  const bounded = foldWords(b, big);
  const total = bounded.words.reduce((n, w) => n + w.text.length, 0);
  t.ok(total <= MAX_WORDS_CHARS, 'bounded');
  t.equal(bounded.leftOut + bounded.words.length, 33, 'every message listed or counted');
  t.equal(bounded.words.at(-1)?.text.startsWith('29 '), true, 'the newest kept');
});
