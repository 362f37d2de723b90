import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { formatByName } from '../../src/formats/registry.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { resolveModel } from '../../src/tokens/models.js';

/**
 * The token count cache's entries are small (issue 39 #10): its bound is a count (200,000 by
 * default), so what one entry holds is what makes it a bound in bytes. Keys built whole for each
 * entry held 405 bytes each (a template of five pieces); one shared prefix per (profile, format,
 * media) and the hash hold about 120. Measured on the heap after full collections, not timed.
 */

// V8's collector, reached without starting the test with --expose-gc (as worker.ts does).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = (): number => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

t.test('an entry of the count cache holds well under 250 bytes', async (t) => {
  const format = formatByName('openai-chat');
  if (!format) throw new Error('openai-chat is a format');
  const profile = resolveModel('gpt-4o');
  const n = 50_000;
  const messages = Array.from({ length: n }, (_, i) => ({ role: 'user', content: `message ${i}: ${'some text '.repeat(10)}` }));
  // The tokenizer's own merge cache (bounded by gpt-tokenizer) fills with these words first, and the
  // cache exists (its fixed arrays allocated) before the baseline: only what the entries add is measured.
  const uncached = new TokenCounter(0);
  for (const m of messages) uncached.countMessage(format, profile, m);
  const counter = new TokenCounter(200_000);
  const before = heap();
  for (const m of messages) counter.countMessage(format, profile, m);
  const after = heap();
  t.equal(counter.stats().entries, n, 'one entry per distinct message');
  const perEntry = (after - before) / n;
  t.ok(perEntry < 250, `${perEntry.toFixed(0)} bytes per entry`);
  // The same text counted again is found: the shared prefix keys it as before.
  t.equal(counter.countMessage(format, profile, { ...messages[7] }), counter.countMessage(format, profile, messages[7]));
  t.equal(counter.stats().hits, 2, 'found, not counted again');
});
