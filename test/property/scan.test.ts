import fc from 'fast-check';
import t from 'tap';
import { escapeText, unescapeLine, valueLines } from '../../src/service/search-scan.js';

/** The lines of every string value (not keys) of a JSON value, in the order JSON.stringify writes them. */
function expected(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(...value.split('\n'));
  else if (Array.isArray(value)) for (const v of value) expected(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) expected(v, out);
  return out;
}

const text = fc.string({ unit: fc.constantFrom('a', 'b', '\n', '"', '\\', '\t', 'é', '\u0001', '/', 'u', 'n', ' ') });

t.test('the lines search reads are the string values of the original, keys left out, unescaped', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
      const json = JSON.stringify(value);
      const lines = [...valueLines(json)].map((l) => unescapeLine(json.slice(l.start, l.end)));
      t.same(lines, expected(value));
    }),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(fc.dictionary(text, text), (value) => {
      const json = JSON.stringify(value);
      const lines = [...valueLines(json)].map((l) => unescapeLine(json.slice(l.start, l.end)));
      t.same(lines, expected(value));
    }),
    { numRuns: 300 },
  );
});

t.test('a string is in a line exactly when its escaped form is in the stored line', async (t) => {
  fc.assert(
    fc.property(text, fc.string({ unit: fc.constantFrom('a', 'b', '"', 'é', '/'), minLength: 1 }), (value, query) => {
      const json = JSON.stringify(value);
      const found = [...valueLines(json)].some((l) => json.slice(l.start, l.end).includes(escapeText(query)));
      t.equal(
        found,
        value.split('\n').some((line) => line.includes(query)),
      );
    }),
    { numRuns: 300 },
  );
  t.equal(unescapeLine('cut \\u00'), 'cut \\u00', 'a piece cut inside an escape keeps it as it is');
});
