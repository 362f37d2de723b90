import t from 'tap';
import { MERGE_CACHE_CLEAR_AT, mergeCacheSize } from '../../src/tokens/encoders.js';
import { build } from '../support/app.js';

/**
 * Issue 39 #10: an idle service kept what its last request left in gpt-tokenizer's cache of
 * merges (up to 100,000 pieces, 38 MiB per encoding) until the next request emptied it. It is now
 * emptied once the answer is sent: a request of 60,000 distinct pieces leaves fewer than
 * `MERGE_CACHE_CLEAR_AT` behind.
 */
t.test('after an answer, the tokenizer keeps fewer than MERGE_CACHE_CLEAR_AT merges', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_WORKERS: '0' });
  const words = Array.from({ length: 60_000 }, (_, i) => `q${(i * 7919).toString(36)}z`);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/tokens',
    payload: { format: 'openai-chat', model: 'gpt-4o', messages: [{ role: 'user', content: words.join(' ') }] },
  });
  t.equal(res.statusCode, 200);
  t.ok(res.json().total > 60_000, 'every piece was counted');
  // inject resolves once the answer is sent; onResponse runs right after it.
  await new Promise((resolve) => setImmediate(resolve));
  const left = mergeCacheSize('o200k_base');
  t.ok(left < MERGE_CACHE_CLEAR_AT, `${left} merges kept once the answer is sent`);
});
