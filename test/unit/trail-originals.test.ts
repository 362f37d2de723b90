import t, { type Test } from 'tap';
import { TRAIL_HEADING } from '../../src/history/vocabulary.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { CompactOptions, compactStrategy } from '../../src/strategies/compact.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { SummarizeOptions, summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { callMessage, toolResult } from '../support/messages.js';

/**
 * The artifact trail reads what compaction offloaded: a tool output compacted before its range is
 * summarized (by an earlier request, or by fit's compaction stage in the same one) still gives the
 * trail its paths, URLs and errors, from the stored (or not yet stored) original.
 */

/** A summarizer that names nothing: whatever survives, the trail put there. */
const lossy: Summarizer = {
  kind: 'llm',
  async summarize() {
    return {
      text: 'The agent worked on the task.',
      usage: { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, calls: 1 },
      model: 'm',
    };
  },
  plan: () => ({ calls: [], model: 'm' }),
  model: () => 'm',
};

/** A long grep output naming a file, a URL and an error of its own. */
const output = (i: number) =>
  [
    `src/pkg/mod_${i}.py:12: value = lookup(key)`,
    `see https://docs.example.org/page_${i} for the lookup rules`,
    `KeyError: 'key_${i}'`,
    ...Array.from({ length: 60 }, (_, k) => `line ${k} of the output, nothing to note here at all`),
  ].join('\n');

const history = () => {
  const messages: unknown[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Find the bug.' },
  ];
  for (let i = 0; i < 6; i++)
    messages.push(callMessage(`c${i}`, 'bash', { command: `grep -rn lookup part_${i}` }), toolResult(`c${i}`, output(i)));
  messages.push(
    { role: 'assistant', content: 'Found it.' },
    { role: 'user', content: 'Fix it.' },
    { role: 'assistant', content: 'Done.' },
  );
  return messages;
};

const trailOf = (text: string | undefined) => (text ?? '').slice((text ?? '').indexOf(TRAIL_HEADING));

/** What the trail must hold of every output, compacted or not. */
function holdsEveryOutput(t: Test, trail: string, label: string) {
  for (let i = 0; i < 6; i++) {
    t.match(trail, `src/pkg/mod_${i}.py`, `${label}: the path of output ${i}`);
    t.match(trail, `https://docs.example.org/page_${i}`, `${label}: the URL of output ${i}`);
    t.match(trail, `KeyError: 'key_${i}'`, `${label}: the error of output ${i}`);
  }
}

t.test('a summary of outputs compacted by an earlier request: the trail reads the stored originals', async (t) => {
  const c = new Compactor(new TokenCounter(1000), { store: new MemoryStore(), summarizer: lossy });
  const compacted = await c.run(compactStrategy, { messages: history() }, CompactOptions.parse({ keep_tool_uses: 1 }));
  t.equal(compacted.extra.artifacts.length, 5, 'five outputs offloaded');
  t.notMatch(JSON.stringify(compacted.messages), 'src/pkg/mod_0.py', 'the first output is a placeholder now');
  const summarized = await c.run(
    summarizeStrategy,
    { messages: compacted.messages },
    SummarizeOptions.parse({ keep: { messages: 2 }, store: 'none' }),
  );
  const summary = summarized.extra.summary;
  holdsEveryOutput(t, trailOf(summary?.text), 'summarize');
  t.equal(summary?.facts.classes.find((k) => k.class === 'errors')?.found, 6, 'every error found');
});

t.test("fit: what its compaction stage offloads in the same request reaches the summary's trail", async (t) => {
  const c = new Compactor(new TokenCounter(1000), { store: new MemoryStore(), summarizer: lossy });
  const fitted = await c.run(
    fitStrategy,
    { messages: history() },
    FitOptions.parse({ target_tokens: 100, policy: 'tokens', summarize: { keep: { messages: 2 } } }),
  );
  t.same(
    fitted.extra.stages.map((s) => [s.strategy, s.applied]).slice(0, 2),
    [
      ['compact', true],
      ['summarize', true],
    ],
    'compacted, then summarized',
  );
  holdsEveryOutput(t, trailOf(fitted.extra.summary?.text), 'fit');
});

t.test('fit in sections mode: a section summary reads the originals too', async (t) => {
  const c = new Compactor(new TokenCounter(1000), { store: new MemoryStore(), summarizer: lossy });
  const fitted = await c.run(
    fitStrategy,
    { messages: history() },
    FitOptions.parse({ target_tokens: 100, policy: 'tokens', summarize: { mode: 'sections', keep_sections: 1 } }),
  );
  t.same(fitted.extra.stages.map((s) => [s.strategy, s.applied]).slice(0, 2), [
    ['compact', true],
    ['summarize', true],
  ]);
  const text = JSON.stringify(fitted.messages);
  for (let i = 0; i < 6; i++) t.match(text, `src/pkg/mod_${i}.py`, `the path of output ${i}`);
});

t.test('originals the service does not have: the placeholders stay, the trail does less', async (t) => {
  const c = new Compactor(new TokenCounter(1000), { store: new MemoryStore(), summarizer: lossy });
  // Cleared, not offloaded: nothing to read back.
  const cleared = await c.run(
    compactStrategy,
    { messages: history() },
    CompactOptions.parse({ keep_tool_uses: 1, store: 'none' }),
  );
  const a = await c.run(summarizeStrategy, { messages: cleared.messages }, SummarizeOptions.parse({ keep: { messages: 2 } }));
  t.ok(a.applied);
  t.notMatch(trailOf(a.extra.summary?.text), 'src/pkg/mod_0.py', 'a cleared output is gone');
  t.match(trailOf(a.extra.summary?.text), 'src/pkg/mod_5.py', 'the output kept is read');
  // Offloaded to a store this service does not read (another instance's, or expired).
  const other = new Compactor(new TokenCounter(1000), { store: new MemoryStore(), summarizer: lossy });
  const offloaded = await other.run(compactStrategy, { messages: history() }, CompactOptions.parse({ keep_tool_uses: 1 }));
  const b = await c.run(summarizeStrategy, { messages: offloaded.messages }, SummarizeOptions.parse({ keep: { messages: 2 } }));
  t.ok(b.applied);
  t.notMatch(trailOf(b.extra.summary?.text), 'src/pkg/mod_0.py', 'an unknown original leaves its placeholder');
});
