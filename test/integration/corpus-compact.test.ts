import assert from 'node:assert/strict';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { type CompactOptions, compactStrategy } from '../../src/strategies/compact.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadConverted } from '../support/convert.js';
import { loadCorpus } from '../support/corpus.js';
import { violationsOf } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

const DEFAULTS: CompactOptions = {
  keep_tool_uses: 3,
  min_tokens: 100,
  exclude_tools: [],
  clear_tool_inputs: false,
  rules: [],
  dedupe: true,
  store: 'server',
};
const SETTINGS: [string, Partial<CompactOptions>][] = [
  ['defaults', {}],
  ['keep_tool_uses 1, inputs, truncation', { keep_tool_uses: 1, clear_tool_inputs: true, truncate_tokens: 400 }],
  ['keep_tool_uses 10, inline store', { keep_tool_uses: 10, store: 'inline' }],
];

const json = (v: unknown) => JSON.stringify(v);

for (const transcript of [...loadCorpus(), ...loadConverted()]) {
  t.test(`${transcript.file}: compacts and expands back byte-exact`, async (t) => {
    const compactor = new Compactor(new TokenCounter(50_000), { store: new MemoryStore() });
    const req = {
      messages: transcript.messages,
      ...('system' in transcript && transcript.system ? { system: transcript.system } : {}),
      ...(transcript.model ? { model: transcript.model } : {}),
    };
    const original = json(transcript.messages);
    for (const [label, extra] of SETTINGS) {
      const options = { ...DEFAULTS, ...extra };
      const res = await compactor.run(compactStrategy, req, options);
      assert.deepEqual(violationsOf(transcript.format, res.messages), [], `${label}: structural rules`);
      assert.deepEqual(schemaErrors(transcript.format, res.messages), [], `${label}: provider schema`);
      assert.ok(res.tokens.after <= res.tokens.before, `${label}: never grows`);
      const inline = options.store === 'inline' ? res.extra.artifacts.map((a) => ({ id: a.id, content: a.content })) : undefined;
      const expanded = await compactor.expand({ messages: res.messages, artifacts: inline });
      assert.deepEqual(expanded.missing, [], `${label}: every artifact found`);
      assert.equal(json(expanded.messages), original, `${label}: expand(compact(x)) == x`);
      const again = await compactor.run(compactStrategy, { ...req, messages: res.messages }, options);
      assert.equal(json(again.messages), json(res.messages), `${label}: idempotent`);
      t.pass(`${label}: saved ${res.tokens.saved} of ${res.tokens.before} tokens, ${res.extra.artifacts.length} artifacts`);
    }
  });
}
