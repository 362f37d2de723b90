/**
 * Dry runs compute and report everything and change nothing (docs/api.md, "Common request fields", `dry_run`): `actions` shows
 * what the real run would do to each message (`summarize`, `rewrite`, `offload`, …), while
 * `messages` stays as it came, no LLM is called and nothing is stored. Only the summaries' own
 * size is unknown before they are written: `tokens.after` estimates it, and says so.
 */
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ArtifactStore, KeptArtifacts, NewArtifact } from '../../src/store/types.js';
import { fitStrategy } from '../../src/strategies/fit/index.js';
import { summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { Summarizer, SummaryRequest } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { buildWithLlm } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';

/** A summarizer that counts its calls and answers a short summary. */
class Counting implements Summarizer {
  readonly kind = 'llm' as const;
  calls = 0;
  async summarize(_request: SummaryRequest) {
    this.calls++;
    return {
      text: 'Goal: build the project. Done: every step.',
      usage: { input_tokens: 100, output_tokens: 10, cached_input_tokens: 0, calls: 1 },
      model: 'counting',
    };
  }
  plan() {
    return { calls: [{ purpose: 'summary' as const, input_tokens: 1 }], model: 'counting' };
  }
  model() {
    return 'counting';
  }
}

/** A memory store that counts what is written to it. */
class Spy extends MemoryStore implements ArtifactStore {
  written = 0;
  override async put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttl: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    this.written += artifacts.length;
    return super.put(scope, artifacts, ttl, now, kept);
  }
}

const chatStep = (i: number) => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"command":"make step${i}"}` } }],
  },
  { role: 'tool', tool_call_id: `c${i}`, content: `step ${i}: ${'log line\n'.repeat(30)}` },
];
const anthropicStep = (i: number) => [
  { role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'bash', input: { command: `make step${i}` } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: `step ${i}: ${'log line\n'.repeat(30)}` }] },
];
const HISTORIES: Record<string, unknown[]> = {
  'openai-chat': [
    { role: 'system', content: 'You are a build agent.' },
    { role: 'user', content: 'Build the project.' },
    ...Array.from({ length: 10 }, (_, i) => chatStep(i)).flat(),
  ],
  // The summary joins the first user message here (roles alternate): a `rewrite` of its host.
  anthropic: [{ role: 'user', content: 'Build the project.' }, ...Array.from({ length: 10 }, (_, i) => anthropicStep(i)).flat()],
};

for (const [format, messages] of Object.entries(HISTORIES)) {
  t.test(`${format}: a rolling summarize dry run reports the actions the real run records`, async (t) => {
    const summarizer = new Counting();
    const store = new Spy();
    const compactor = new Compactor(new TokenCounter(1000), { summarizer, store });
    const options = summarizeStrategy.options.parse({ keep: { messages: 4 }, summarizer: { max_tokens: 128 } });
    const req = { messages, format };
    const dry = await compactor.run(summarizeStrategy, { ...req, dry_run: true }, options);
    t.equal(summarizer.calls, 0, 'no LLM call');
    t.equal(store.written, 0, 'nothing stored');
    t.equal(dry.messages, messages, 'the history as it came');
    t.equal(dry.applied, false);
    t.equal(dry.reason, 'dry_run');
    t.ok(dry.extra.plan, 'the calls it would make');
    t.match(dry.warnings, [{ code: 'dry_run_estimate' }], 'tokens.after is an estimate, and says so');

    const real = await compactor.run(summarizeStrategy, req, options);
    t.equal(real.applied, true);
    t.same(dry.actions, real.actions, 'the same action, and tokens freed, for every message');
    t.ok(dry.actions.some((a) => a.action === 'summarize'));
    if (format === 'anthropic') t.equal(dry.actions[0]?.action, 'rewrite', 'the host the summary joins');
    t.ok(dry.tokens.after < dry.tokens.before, 'a saving even with the summary at its full budget');
  });
}

t.test('a sections dry run reports the actions of the steps it can predict', async (t) => {
  const summarizer = new Counting();
  const store = new Spy();
  const compactor = new Compactor(new TokenCounter(1000), { summarizer, store });
  const messages = [
    ...(HISTORIES['openai-chat'] as unknown[]).slice(0, 8),
    { role: 'user', content: 'Now run the tests.' },
    ...Array.from({ length: 4 }, (_, i) => chatStep(20 + i)).flat(),
  ];
  const options = summarizeStrategy.options.parse({
    mode: 'sections',
    qa: { enabled: false },
    max_pair_tokens: 64,
    max_section_tokens: 100_000,
    // A dry run does not estimate the artifact trail's size (only the summaries' budget).
    trail_tokens: 0,
  });
  const dry = await compactor.run(summarizeStrategy, { messages, dry_run: true }, options);
  t.equal(summarizer.calls, 0);
  t.equal(store.written, 0);
  t.equal(dry.messages, messages);
  t.equal(dry.reason, 'dry_run');
  t.match(dry.warnings, [{ code: 'dry_run_estimate', message: /max_section_tokens/ }], 'says what is not predicted');
  const real = await compactor.run(summarizeStrategy, { messages }, options);
  t.equal(real.applied, true);
  t.equal(summarizer.calls, dry.extra.plan?.calls.length, 'the run makes the calls planned');
  t.same(dry.actions, real.actions, 'the same action, and tokens freed, for every message');
});

t.test('a fit dry run reports compaction and the summary it would write, per message', async (t) => {
  const summarizer = new Counting();
  const store = new Spy();
  const compactor = new Compactor(new TokenCounter(1000), { summarizer, store });
  const messages = HISTORIES['openai-chat'] as unknown[];
  const options = fitStrategy.options.parse({
    target_tokens: 500,
    // A dry run does not estimate the artifact trail's size: with one, this 500-token target needs a window.
    summarize: { keep: { messages: 4 }, summarizer: { max_tokens: 128 }, trail_tokens: 0 },
  });
  const dry = await compactor.run(fitStrategy, { messages, dry_run: true }, options);
  t.equal(summarizer.calls, 0);
  t.equal(store.written, 0);
  t.equal(dry.messages, messages);
  t.equal(dry.reason, 'dry_run');
  t.same(
    dry.extra.stages.map((s) => [s.strategy, s.reason ?? 'applied']),
    [
      ['compact', 'applied'],
      ['summarize', 'dry_run'],
    ],
  );
  const real = await compactor.run(fitStrategy, { messages }, options);
  t.same(
    real.extra.stages.map((s) => s.strategy),
    ['compact', 'summarize'],
    'the real run needs no window either',
  );
  t.same(dry.actions, real.actions, 'the same action, and tokens freed, for every message');
  t.ok(dry.actions.some((a) => a.action === 'summarize'));
});

const django = loadCorpus().find((x) => x.file.includes('django__django-11138'));

t.test('a fit dry run over HTTP on a real transcript: the actions of the real run, no call', async (t) => {
  if (!django) throw new Error('corpus missing');
  const { app, server } = await buildWithLlm(t, { COMPACTOR_SUMMARIZER_MODEL: 'small' });
  const payload = { messages: django.messages, model: django.model, target_tokens: 20_000 };
  const dry = (await app.inject({ method: 'POST', url: '/v1/fit', payload: { ...payload, dry_run: true } })).json();
  t.equal(server.requests.length, 0);
  const real = (await app.inject({ method: 'POST', url: '/v1/fit', payload })).json();
  t.same(
    real.stages.map((s: { strategy: string }) => s.strategy),
    ['compact', 'summarize'],
  );
  t.same(
    dry.actions.map((a: { action: string }) => a.action),
    real.actions.map((a: { action: string }) => a.action),
    'what happens to each message',
  );
});
