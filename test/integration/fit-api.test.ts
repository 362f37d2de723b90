import t from 'tap';
import { build, buildWithLlm } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';
import { violationsOf } from '../support/invariants.js';

const corpus = loadCorpus();
const django = corpus.find((x) => x.file.includes('django__django-11138'));

t.test('fit stages on a real transcript: compaction alone, then summarization, then the window when the LLM fails', async (t) => {
  if (!django) throw new Error('corpus missing');
  const { server, app } = await buildWithLlm(t, { COMPACTOR_SUMMARIZER_MAX_RETRIES: '0' });
  const fit = async (payload: Record<string, unknown>) =>
    (
      await app.inject({
        method: 'POST',
        url: '/v1/fit',
        payload: { messages: django.messages, model: django.model, policy: 'tokens', ...payload },
      })
    ).json();

  const easy = await fit({ target_tokens: 70_000 });
  t.same(
    easy.stages.map((s: { strategy: string; applied: boolean }) => [s.strategy, s.applied]),
    [['compact', true]],
    'compaction alone suffices',
  );
  t.ok(easy.tokens.after <= 70_000);
  t.equal(easy.usage.calls, 0, 'no LLM call');
  t.equal(server.requests.length, 0);

  const hard = await fit({ target_tokens: 20_000 });
  t.same(
    hard.stages.map((s: { strategy: string; applied: boolean }) => [s.strategy, s.applied]),
    [
      ['compact', true],
      ['summarize', true],
    ],
    'summarizes only when compaction is not enough',
  );
  t.ok(hard.tokens.after <= 20_000, `under target: ${hard.tokens.after}`);
  t.ok(hard.usage.calls >= 1 && hard.usage.calls === server.requests.length, 'billed usage is the stages’ sum');
  t.equal(hard.usage.calls, hard.stages[1].usage.calls);
  t.equal(hard.summary.summarizer, 'llm');
  t.same(violationsOf('openai-chat', hard.messages), []);

  server.enqueue({ fault: 'status', status: 500 });
  const failing = await fit({ target_tokens: 20_000, summarize: { keep: { messages: 30 } } });
  t.same(
    failing.stages.map((s: { strategy: string; applied: boolean }) => [s.strategy, s.applied]),
    [
      ['compact', true],
      ['summarize', false],
      ['window', true],
    ],
    'the window stands in when the summarizer fails',
  );
  t.equal(failing.stages[1].reason, 'summarizer_failed');
  t.ok(failing.tokens.after <= 20_000);
  t.ok(failing.dropped.messages > 0);
  t.same(
    failing.fallback,
    { from: 'summarize', to: 'window', reason: 'CMP_ERR_SUMMARIZER_UPSTREAM' },
    'the window standing in is reported as the fallback',
  );
  t.equal(hard.fallback, undefined, 'no fallback when the summary succeeded');

  server.enqueue({ fault: 'status', status: 500 });
  const strict = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: {
      messages: django.messages,
      model: django.model,
      target_tokens: 20_000,
      summarize: { on_failure: 'error', keep: { messages: 30 } },
    },
  });
  t.equal(strict.statusCode, 502, 'summarize.on_failure: error is honoured');
  t.equal(strict.json().code, 'CMP_ERR_SUMMARIZER_UPSTREAM');

  const below = await fit({ target_tokens: 1_000_000 });
  t.equal(below.applied, false);
  t.equal(below.reason, 'below_trigger', 'the target is the trigger');

  const missing = await app.inject({ method: 'POST', url: '/v1/fit', payload: { messages: django.messages } });
  t.equal(missing.statusCode, 400, 'a target is required');
  const triggered = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: { messages: django.messages, trigger: { tokens: 1_000_000 } },
  });
  t.equal(triggered.statusCode, 400, 'a target is required below the trigger too');
  t.equal(triggered.json().errors[0].path, 'target_tokens');
  const fraction = await fit({ target_fraction: 0.1, context_window: 200_000 });
  t.equal(fraction.target, 20_000);
});

t.test('fit on the corpus: valid output, at or under target or target_not_met', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  for (const transcript of corpus) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/fit',
      payload: {
        messages: transcript.messages,
        target_tokens: 8000,
        policy: 'tokens',
        ...(transcript.model ? { model: transcript.model } : {}),
      },
    });
    t.equal(res.statusCode, 200, transcript.file);
    const body = res.json();
    t.same(violationsOf(transcript.format, body.messages), [], `${transcript.file}: valid`);
    t.ok(
      body.tokens.after <= 8000 ||
        body.warnings.some((w: { code: string }) => w.code === 'target_not_met') ||
        body.reason === 'below_trigger',
      `${transcript.file}: ${body.tokens.before} → ${body.tokens.after} (${body.stages.map((s: { strategy: string; applied: boolean }) => `${s.strategy}:${s.applied}`).join(' ')})`,
    );
  }
});

t.test(
  'fit: when the window must still cut after a summary, it keeps the summary and marks what it removes after it',
  async (t) => {
    const { server, app } = await buildWithLlm(t);
    server.fallback = () => ({
      content: '## Goal and constraints\nWrite the essay.\n## Current state\nParagraphs 1 to 20 drafted.',
    });
    const paragraph = (i: number) => `Paragraph ${i}: ${'the quick brown fox jumps over the lazy dog '.repeat(30)}`;
    const messages = [
      { role: 'system', content: 'You are a writer.' },
      { role: 'user', content: 'Write a long essay, one paragraph per turn.' },
      ...Array.from({ length: 24 }, (_, i) => ({ role: i % 2 ? 'user' : 'assistant', content: i % 2 ? 'Go on.' : paragraph(i) })),
    ];
    // Four newest messages kept by the summary are still over the target: the window must cut.
    const res = await app.inject({
      method: 'POST',
      url: '/v1/fit',
      payload: { messages, target_tokens: 600, summarize: { keep: { messages: 4 } } },
    });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(
      body.stages.map((s: { strategy: string; applied: boolean }) => [s.strategy, s.applied]),
      [
        ['compact', false],
        ['summarize', true],
        ['window', true],
      ],
    );
    t.match(body.messages[body.summary.message_index].content, /^\[compactor:summary /, 'the summary is where the report says');
    t.same(violationsOf('openai-chat', body.messages), []);
    const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: body.messages } });
    t.equal(expanded.statusCode, 200);
    t.ok(expanded.json().restored >= 1 && expanded.json().missing.length === 0, 'the summarized range is restored');
    t.same(expanded.json().messages, messages, 'expand gives back every input message, those the window removed too (issue 37)');
    t.match(JSON.stringify(body.messages), /\[compactor:window art_[0-9a-f]{24} own covers=\d+ mac=/, 'a marker stands for them');
    t.ok(
      body.actions.filter((a: { action: string }) => a.action === 'summarize').length > 0 &&
        body.actions.some((a: { action: string }) => a.action === 'drop'),
      'some messages summarized, the ones after the summary dropped',
    );
  },
);

t.test('fit dry run: reports the stages it can predict and the summarizer calls it would make, calls nothing', async (t) => {
  if (!django) throw new Error('corpus missing');
  const { server, app } = await buildWithLlm(t);
  const payload = { messages: django.messages, model: django.model, target_tokens: 20_000 };
  const dry = (await app.inject({ method: 'POST', url: '/v1/fit', payload: { ...payload, dry_run: true } })).json();
  t.equal(server.requests.length, 0, 'no LLM call');
  t.equal(dry.applied, false);
  t.equal(dry.reason, 'dry_run');
  t.same(dry.messages, django.messages, 'the history unchanged');
  t.same(
    dry.stages.map((s: { strategy: string; reason?: string }) => [s.strategy, s.reason ?? 'applied']),
    [
      ['compact', 'applied'],
      ['summarize', 'dry_run'],
    ],
    'no window guessed after a summary that was not made',
  );
  t.ok(dry.plan.calls.length >= 1, 'the summarizer calls it would make');
  t.notOk(
    dry.warnings.some((w: { code: string }) => w.code === 'target_not_met'),
    'no target_not_met before the summary',
  );
  const real = (await app.inject({ method: 'POST', url: '/v1/fit', payload })).json();
  t.equal(server.requests.length, dry.plan.calls.length, 'the real run makes the calls planned');
  t.same(
    real.stages.map((s: { strategy: string }) => s.strategy),
    ['compact', 'summarize'],
  );
});
