// In-process cost of one request per strategy on the load benchmark's body (warm caches), median
// of 20 after 3 warm-ups (diagnostic for the Load section of RESULTS.md).
// Run: npm run build && node bench/fit-profile.mjs
import { readFileSync } from 'node:fs';
import { Compactor, compactStrategy, fitStrategy, TokenCounter, windowStrategy } from '../dist/index.js';
import { MemoryStore } from '../dist/store/memory.js';
import { CompactOptions } from '../dist/strategies/compact-options.js';
import { FitOptions } from '../dist/strategies/fit/index.js';
import { CORPUS_DIR } from './lib/corpus.mjs';

const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const c = new Compactor(new TokenCounter(100000), { store: new MemoryStore() });
const req = { messages, model: 'gpt-4o' };
for (const [name, s, o] of [
  ['window', windowStrategy, { keep: { messages: 40 }, keep_first_user: true }],
  ['compact', compactStrategy, CompactOptions.parse({})],
  ['fit', fitStrategy, FitOptions.parse({ target_tokens: 12000 })],
  ['fit (policy tokens)', fitStrategy, FitOptions.parse({ target_tokens: 12000, policy: 'tokens' })],
  ['tokens', null, null],
]) {
  for (let i = 0; i < 3; i++) s ? await c.run(s, req, o) : c.tokens(req);
  const t0 = performance.now();
  const N = 20;
  for (let i = 0; i < N; i++) s ? await c.run(s, req, o) : c.tokens(req);
  console.log(name, ((performance.now() - t0) / N).toFixed(2), 'ms');
}
