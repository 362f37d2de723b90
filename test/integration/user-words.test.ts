import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { summarizeStrategy } from '../../src/strategies/summarize/index.js';
import { ExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadCorpus } from '../support/corpus.js';

/**
 * The user's own words survive summaries (issue 37): three short corrections typed into the range
 * a summary replaces are in the history word for word after the summary, with an LLM summarizer
 * that writes little and with the extractive one, and still after a second summary folds the first.
 */

const CORRECTIONS = [
  'do not touch the tests under tests/legacy; only change files in src/',
  'the config must stay YAML, never JSON',
  'the fix has to work on Python 3.8 as well',
];

/** An LLM summarizer that writes little: whatever the range held, one line. */
class Terse implements Summarizer {
  readonly kind = 'llm' as const;
  async summarize() {
    return {
      text: 'Goal: fix it. Done: some.',
      usage: { input_tokens: 10, output_tokens: 5, cached_input_tokens: 0, calls: 1 },
      model: 'terse',
    };
  }
  plan() {
    return { calls: [], model: 'terse' };
  }
}

type Chat = { role: string; content?: unknown };

/** The transcript with the corrections typed as user messages at 30%, 45% and 60% of it, each before an assistant turn. */
function withCorrections(messages: readonly Chat[]): { messages: Chat[]; at: number[] } {
  const out = [...messages];
  const at: number[] = [];
  for (const [k, fraction] of [0.6, 0.45, 0.3].entries()) {
    let i = Math.floor(out.length * fraction);
    while (i < out.length && out[i]?.role !== 'assistant') i++;
    out.splice(i, 0, { role: 'user', content: CORRECTIONS[2 - k] });
    at.push(i);
  }
  return { messages: out, at };
}

const six = loadCorpus()
  .filter((c) => c.format === 'openai-chat' && c.messages.length >= 40)
  .slice(0, 6);

const text = (messages: readonly unknown[]) => messages.map((m) => JSON.stringify(m)).join('\n');

for (const [name, summarizer] of [
  ['an LLM summarizer that writes little', new Terse()],
  ['the extractive summarizer', new ExtractiveSummarizer()],
] as const) {
  t.test(`${name}: the three corrections are in the history verbatim, after a summary and after a fold, in 6 of 6`, async (t) => {
    t.equal(six.length, 6, 'six corpus transcripts');
    const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer });
    let kept = 0;
    let folded = 0;
    for (const transcript of six) {
      const { messages } = withCorrections(transcript.messages as Chat[]);
      const req = { messages, format: 'openai-chat' as const, model: 'gpt-4o' };
      const once = await compactor.run(
        summarizeStrategy,
        req,
        summarizeStrategy.options.parse({ keep: { messages: Math.floor(messages.length * 0.3) } }),
      );
      t.equal(once.applied, true, `${transcript.file}: summarized`);
      const summarized = once.actions.filter((a) => a.action === 'summarize').map((a) => a.index);
      const typed = messages.flatMap((m, i) => (CORRECTIONS.includes(String(m.content)) ? [i] : []));
      t.ok(
        typed.every((i) => summarized.includes(i)),
        `${transcript.file}: the corrections were in the summarized range`,
      );
      if (CORRECTIONS.every((c) => text(once.messages).includes(c))) kept++;
      // A second summary folds the first: its range starts after it.
      const again = await compactor.run(
        summarizeStrategy,
        { ...req, messages: once.messages as Chat[] },
        summarizeStrategy.options.parse({ keep: { messages: 4 } }),
      );
      t.equal(again.applied, true, `${transcript.file}: folded`);
      t.ok(again.extra.summary?.parent_id, `${transcript.file}: the second summary folds the first`);
      if (CORRECTIONS.every((c) => text(again.messages).includes(c))) folded++;
    }
    t.equal(kept, 6, 'all three verbatim after the summary, 6 of 6');
    t.equal(folded, 6, 'all three verbatim after the fold, 6 of 6');
  });
}
