import fc from 'fast-check';
import t from 'tap';
import { factMemoStats, MEMO_MIN_CHARS, scanFactsOnce } from '../../src/summarizers/fact-memo.js';
import { scanFacts } from '../../src/summarizers/fact-scan.js';
import { renderTrail } from '../../src/summarizers/trail.js';
import { buildTrail } from '../../src/summarizers/trail-text.js';
import type { TranscriptEntry } from '../../src/summarizers/types.js';

/**
 * A text's facts are scanned once (`scanFactsOnce`): the same facts in the same order as
 * `scanFacts`, the first time and every time after, for both kinds of scan; and a summary's
 * trail over a grown range scans only the texts that are new.
 */

const collect = (scan: (text: string, emit: (f: string) => void, words?: boolean) => void, text: string, words: boolean) => {
  const out: string[] = [];
  scan(text, (f) => out.push(f), words);
  return out;
};

/** Texts with what facts are made of: paths, URLs, ids, numbers with units, errors, and noise around them. */
const piece = fc.oneof(
  fc.constantFrom(
    'src/app.ts',
    '/testbed/django/db/models/constraints.py',
    'https://example.com/a/b?c=1',
    'http://x.io',
    'KeyError',
    'MAX_RETRIES',
    'call_abc123',
    '550e8400-e29b-41d4-a716-446655440000',
    'deadbeefcafe1234',
    '12 ms',
    '50%',
    'a//b/c.py',
    'tests/test_x.py::test_y[1]',
    '—',
    'é',
    '\n',
    ' ',
    '`',
    '"',
    '.',
  ),
  fc.string({ maxLength: 12 }),
);
const text = fc
  .oneof(fc.array(piece, { maxLength: 20 }), fc.array(piece, { minLength: 60, maxLength: 200 }))
  .map((pieces) => pieces.join(' '));

t.test('the same facts as scanFacts, the first time and the next', async (t) => {
  const before = factMemoStats();
  fc.assert(
    fc.property(text, fc.boolean(), (s, words) => {
      const expected = collect(scanFacts, s, words);
      const first = collect(scanFactsOnce, s, words);
      const again = collect(scanFactsOnce, s, words);
      return JSON.stringify(first) === JSON.stringify(expected) && JSON.stringify(again) === JSON.stringify(expected);
    }),
    { numRuns: 300 },
  );
  const after = factMemoStats();
  t.ok(after.found - before.found > 100, `texts long enough to be kept were found again (${after.found - before.found})`);
});

t.test('a scan with words and one without are kept apart', async (t) => {
  const s = `${'see src/app.ts and MAX_RETRIES and call_abc123 '.repeat(10)}`;
  t.ok(s.length >= MEMO_MIN_CHARS);
  t.same(collect(scanFactsOnce, s, true), collect(scanFacts, s, true));
  t.same(collect(scanFactsOnce, s, false), collect(scanFacts, s, false));
  t.not(collect(scanFacts, s, true).length, collect(scanFacts, s, false).length, 'the two scans differ here');
});

/** A tool result long enough to be kept, naming its own file. */
const result = (i: number): TranscriptEntry => ({
  role: 'tool',
  text: `<returncode>0</returncode>\n<output>\n${`src/module${i}/file${i}.py:${i}: def handler_${i}(): pass\n`.repeat(8)}</output>`,
  calls: [],
  tool: { name: 'bash', error: false, callId: `call_${i}` },
  media: [],
});

const rendered = (entries: TranscriptEntry[]) => renderTrail(buildTrail(entries), '', 100_000).text;

t.test("a grown range's trail scans only its new texts", async (t) => {
  const entries = Array.from({ length: 20 }, (_, i) => result(i));
  rendered(entries);
  const before = factMemoStats();
  const grown = [...entries, result(20), result(21)];
  const trail = rendered(grown);
  const after = factMemoStats();
  t.equal(after.scanned - before.scanned, 2, 'the two new results scanned');
  t.ok(after.found - before.found >= 20, 'the others found again');
  t.match(trail, 'src/module21/file21.py', 'the new results are in the trail');
  t.match(trail, 'src/module0/file0.py', 'and the earlier ones');
  t.equal(rendered(grown), trail, 'the same trail again');
});
