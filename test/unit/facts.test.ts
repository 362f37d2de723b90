import t from 'tap';
import { extractFacts, guardFacts } from '../../src/summarizers/facts.js';

const facts = (text: string) => extractFacts([text]);

t.test('paths and URLs', async (t) => {
  t.same(facts('Edit src/app.ts, then ./a/b.py:12 and /usr/lib/x.so.1.'), ['src/app.ts', './a/b.py', '/usr/lib/x.so.1']);
  t.same(facts('../../lib/a.test.ts and node_modules/@types/node/index.d.ts'), [
    '../../lib/a.test.ts',
    'node_modules/@types/node/index.d.ts',
  ]);
  t.same(facts('at Object.<anonymous> (/home/u/app/index.js:10:5)'), ['/home/u/app/index.js'], 'a stack frame');
  t.same(facts('File "/usr/lib/python3.11/site-packages/x.py", line 3'), ['/usr/lib/python3.11/site-packages/x.py']);
  t.same(facts('FAILED tests/test_api.py::test_get'), ['tests/test_api.py']);
  t.same(facts('path=src/app.ts'), ['src/app.ts'], 'after a key');
  t.same(facts('a//b/c.ts'), ['/b/c.ts'], 'a doubled slash starts over');
  t.same(facts('see 日本語src/app.ts文件'), ['src/app.ts'], 'inside unspaced CJK text');
  t.same(facts('a/b/c and /a.ts'), ['a.ts'], 'no extension is no path; a root file is a file name');
  t.same(facts('See https://example.com/search?q=a&b=c#frag, and (https://x.io/a_b).'), [
    'https://example.com/search?q=a&b=c#frag',
    'https://x.io/a_b',
  ]);
  t.same(facts('`https://github.com/x/y/blob/main/a.py#L49`'), ['https://github.com/x/y/blob/main/a.py#L49'], 'no backtick');
  t.same(facts('url=https://api.x.io/v1?x=1;'), ['https://api.x.io/v1?x=1'], 'after a key, trailing punctuation dropped');
  t.same(facts('xhttps://a.io http:// alone'), [], 'a scheme inside a word, or without an address');
  t.same(facts(`https://a.io/${'x'.repeat(300)}`), [], 'past 200 characters');
});

t.test('file names, errors, constants, ids, hex, numbers', async (t) => {
  t.same(facts('open README.md and package.json; my-file.test.ts; --config.yaml'), [
    'README.md',
    'package.json',
    'my-file.test.ts',
    'config.yaml',
  ]);
  t.same(facts('www.example.com e.g. Node.js'), ['Node.js'], 'known extensions only');
  t.same(facts('raise ValueError("bad") TypeError: x; builtins.KeyError Error Exception'), [
    'ValueError',
    'TypeError',
    'KeyError',
  ]);
  t.same(facts('MAX_RETRIES=3 HTTP_404_NOT_FOUND A_B Max_Retries'), ['MAX_RETRIES', 'HTTP_404_NOT_FOUND']);
  t.same(facts('id 123e4567-e89b-12d3-a456-426614174000 and req-123E4567-E89B-12D3-A456-426614174001'), [
    '123e4567-e89b-12d3-a456-426614174000',
    '123E4567-E89B-12D3-A456-426614174001',
  ]);
  t.same(facts('"tool_call_id":"call_abc123" toolu_01ABCdef msg_abc art_0123456789abcdef01234567'), [
    'call_abc123',
    'toolu_01ABCdef',
    'art_0123456789abcdef01234567',
  ]);
  t.same(facts(`commit 3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c, short 3f2a9c1, long ${'a'.repeat(41)}`), [
    '3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c',
  ]);
  t.same(facts('took 12 ms, 3.5GB, 50% and 100 tokens at 2.5 req/s; 1 failed in 0.42s'), [
    '12 ms',
    '3.5GB',
    '50%',
    '100 tokens',
    '2.5 req/s',
    '0.42s',
  ]);
  t.same(facts('5 minutes, 10 sec, 3 h, v12ms, 2h'), ['10 sec', '3 h'], 'a unit ends at a non-letter; 3 characters at least');
});

t.test('order and limit', async (t) => {
  const text = 'a/b.ts ValueError a/b.ts c/d.ts ValueError a/b.ts';
  t.same(extractFacts([text]), ['a/b.ts', 'ValueError', 'c/d.ts'], 'first-seen order');
  t.same(extractFacts([text], 2), ['a/b.ts', 'ValueError'], 'the most frequent are kept');
  t.same(extractFacts(['x/one.ts', 'x/two.ts x/two.ts', 'x/three.ts'], 2), ['x/one.ts', 'x/two.ts'], 'ties: the first seen');
  t.same(extractFacts([]), []);
  t.same(extractFacts(['']), []);
});

t.test('pathological text is read quickly and yields nothing spurious', async (t) => {
  const start = process.cpuUsage();
  for (const unit of ['a', 'a-', 'a/', 'http://', '—.', '😀', '1.', 'A_']) {
    t.same(extractFacts([unit.repeat(500_000)]), [], JSON.stringify(unit));
  }
  const used = process.cpuUsage(start);
  // Linear scans of 4 MB take tens of milliseconds; the old patterns took minutes on some of these.
  t.ok((used.user + used.system) / 1000 < 10_000, 'well under 10 s of CPU');
});

t.test('the guard appends what the summary dropped', async (t) => {
  const guarded = guardFacts('Fixed tests/test_api.py.', ['tests/test_api.py', 'KeyError', 'call_abc123456']);
  t.same(guarded.facts, {
    found: 3,
    kept: 1,
    appended: 2,
    left_out: 0,
    classes: [{ class: 'references', found: 3, kept: 1, appended: 2, left_out: 0 }],
  });
  t.match(guarded.text, /Key references:\n- KeyError\n- call_abc123456$/);
});
