/**
 * What the process's caches hold once full, per thread (issue 39 #10): each filled past its bound
 * in this process with distinct content, then the heap it keeps measured after full collections
 * (the texts it was filled with released, so a text a cache keeps counts as its own). The main
 * thread and each worker thread have their own of each.
 *
 *   - the token count cache (`COMPACTOR_TOKEN_CACHE_ENTRIES`, 200,000 by default): 250,000 messages
 *     of about 110 characters;
 *   - the derived values (digests, ids, MACs; 32 MiB by its own measure): 60,000 texts of 1 KiB;
 *   - the parsed tool-call arguments (16 MiB by its own measure): 40,000 arguments of about 200
 *     characters;
 *   - gpt-tokenizer's own cache of merged words (100,000 per encoding, its default): 150,000
 *     distinct words counted with o200k_base.
 *
 * Usage: npm run build && node --expose-gc bench/cache-bounds.mjs
 */
import { formatByName } from '../dist/formats/registry.js';
import { parseArgs } from '../dist/formats/shared.js';
import { sha256Cached } from '../dist/history/address.js';
import { TokenCounter } from '../dist/tokens/counter.js';
import { derived } from '../dist/tokens/derived.js';
import { resolveModel } from '../dist/tokens/models.js';
import { runMeta } from './lib/meta.mjs';

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const heap = () => {
  for (let i = 0; i < 3; i++) globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(1);

/** The heap `fill` leaves behind once the inputs `make` built are released. */
function kept(make, fill) {
  const before = heap();
  let inputs = make();
  const result = fill(inputs);
  inputs = undefined;
  return { bytes: heap() - before, result };
}

console.log(`# what the caches hold once full, per thread ${JSON.stringify(runMeta())}\n`);
console.log('| cache | bound | filled with | entries kept | heap kept MiB |');
console.log('|---|---|---|---:|---:|');

const format = formatByName('openai-chat');
const profile = resolveModel('gpt-4o');
{
  const uncached = new TokenCounter(0);
  const { bytes } = kept(
    () => Array.from({ length: 150_000 }, (_, i) => `zq${(i * 7919).toString(36)}vk`),
    (words) => {
      for (const w of words) uncached.countMessage(format, profile, { role: 'user', content: w });
    },
  );
  console.log(`| tokenizer merges (gpt-tokenizer) | 100,000 words per encoding | 150,000 distinct words | — | ${mib(bytes)} |`);
}
// Then the token counts' own: the merge cache already holds what their words add.
{
  const counter = new TokenCounter(200_000);
  const { bytes } = kept(
    () => Array.from({ length: 250_000 }, (_, i) => ({ role: 'user', content: `message ${i}: ${'the text of it '.repeat(6)}` })),
    (messages) => {
      for (const m of messages) counter.countMessage(format, profile, m);
    },
  );
  console.log(
    `| token counts | 200,000 entries | 250,000 messages of ~110 characters | ${counter.stats().entries} | ${mib(bytes)} |`,
  );
}
{
  const { bytes } = kept(
    () => Array.from({ length: 60_000 }, (_, i) => `${i} `.padEnd(1024, 'x')),
    (texts) => {
      for (const text of texts) sha256Cached(text);
    },
  );
  console.log(
    `| derived values | 32 MiB (its measure: ${mib(derived.stats().bytes)} MiB) | 60,000 texts of 1 KiB | — | ${mib(bytes)} |`,
  );
}
{
  const { bytes } = kept(
    () =>
      Array.from({ length: 40_000 }, (_, i) =>
        JSON.stringify({ command: `ls -la /some/where/${i}`, description: 'the text of it '.repeat(10), timeout: i }),
      ),
    (texts) => {
      for (const text of texts) parseArgs(text);
    },
  );
  console.log(`| parsed tool arguments | 16 MiB (its measure) | 40,000 arguments of ~200 characters | — | ${mib(bytes)} |`);
}
