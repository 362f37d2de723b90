import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompactorClient } from '@compactor/client';
import { recordingFetch, startCompactor } from '../../shared/compactor-service.mjs';
import * as fakeAnthropic from '../../shared/fake-anthropic.mjs';
import { runAgent } from '../agent.mjs';
import * as fakeOpenAI from '../fake-openai.mjs';

const SCRIPT = [
  {
    reads: ['src/server.ts', 'src/routes/fit.ts', 'src/store/memory.ts', 'src/cost/policy.ts', 'src/formats/anthropic.ts'],
    answer: 'DONE: routes call the fit pipeline, which defers a reduction until it repays the cache rewrite.',
  },
];

/** @type {Awaited<ReturnType<typeof startCompactor>>} */ let service;
before(async () => {
  service = await startCompactor();
});
after(async () => {
  await service?.stop();
});

for (const provider of /** @type {const} */ (['openai', 'anthropic'])) {
  test(`generateText with tools on @ai-sdk/${provider}, fit in prepareStep`, async () => {
    const fake = await (provider === 'anthropic' ? fakeAnthropic.startFakeAnthropic(SCRIPT) : fakeOpenAI.startFakeOpenAI(SCRIPT));
    try {
      const recorder = recordingFetch();
      const compactor = new CompactorClient({ baseUrl: service.url, fetch: recorder.fetch });
      const result = await runAgent({
        provider,
        baseURL: fake.url,
        compactor,
        contextWindow: 14_000,
        task: 'Explain how fit is served.',
      });
      const fits = recorder.calls.filter((c) => c.path === '/v1/fit');
      const calls = fake.requests;
      if (process.env.VERBOSE)
        for (const f of fits)
          console.log(f.body.messages.length, f.answer.applied, f.answer.tokens, f.answer.reason, f.body.usage);

      // (b) the agent finished its task.
      assert.equal(result.text, SCRIPT[0].answer);
      assert.equal(calls.length, SCRIPT[0].reads.length + 1);
      assert.equal(fits.length, calls.length, 'one fit call before every step');
      for (const f of fits) assert.equal(f.status, 200, JSON.stringify(f.answer));

      // (a) the model received the history fit returned (as the provider's SDK serialized it).
      for (const [i, fit] of fits.entries()) {
        assert.deepEqual(normalize(calls[i].messages, provider), normalize(fit.answer.messages, provider), `model call ${i}`);
        if (provider === 'anthropic') assert.equal(fakeAnthropic.violation(calls[i]), undefined);
        else assert.equal(fakeOpenAI.violation(calls[i]), undefined);
        // The step after continues from fit's history: the prompt it fits starts with it.
        if (i > 0) assert.deepEqual(fit.body.messages.slice(0, fits[i - 1].answer.messages.length), fits[i - 1].answer.messages);
      }
      assert.ok(
        fits.some((f) => f.answer.applied),
        'fit reduced the history at least once',
      );
      assert.ok(JSON.stringify(calls.at(-1)?.messages).includes('[compactor:art_'), 'the model saw placeholders');

      // (c) each fit call carried the provider's usage of the previous step, with messages_covered.
      assert.equal(fits[0].body.usage, undefined);
      for (let i = 1; i < fits.length; i++) {
        const { messages_covered, ...usage } = fits[i].body.usage;
        const expected = fake.replies[i - 1].usage;
        const fields =
          provider === 'anthropic'
            ? ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'output_tokens']
            : ['prompt_tokens', 'completion_tokens', 'total_tokens'];
        for (const f of fields) assert.equal(usage[f], expected[f], `fit call ${i}: usage.${f}`);
        if (provider === 'openai')
          assert.equal(usage.prompt_tokens_details.cached_tokens, expected.prompt_tokens_details.cached_tokens);
        assert.equal(messages_covered, fits[i - 1].answer.messages.length + 1, `fit call ${i}: messages_covered`);
      }
      const cacheRead = (/** @type {any} */ u) => u.cache_read_input_tokens ?? u.prompt_tokens_details?.cached_tokens;
      assert.ok(
        fake.replies.some((r) => cacheRead(r.usage) > 1000),
        'the prompt cache was read',
      );

      if (provider === 'anthropic') {
        // Signatures made it through the SDK's ModelMessage (providerOptions.anthropic.signature) byte-identical.
        /** @type {Map<string, string>} */
        const signed = new Map();
        for (const r of fake.replies) for (const b of r.content) if (b.type === 'thinking') signed.set(b.signature, b.thinking);
        const last = calls.at(-1).messages;
        const thinking = last
          .flatMap((/** @type {any} */ m) => (Array.isArray(m.content) ? m.content : []))
          .filter((/** @type {any} */ b) => b.type === 'thinking');
        assert.equal(thinking.length, SCRIPT[0].reads.length, 'the turn in progress kept every thinking block');
        for (const b of thinking) assert.equal(signed.get(b.signature), b.thinking);
      }
    } finally {
      await fake.close();
    }
  });
}

/**
 * The content of a history without the serialization choices of one writer or another (string or
 * text blocks, null or absent content, cache_control, key order): what the model reads.
 * @param {any[]} messages @param {string} provider
 */
function normalize(messages, provider) {
  const text = (/** @type {any} */ c) =>
    c == null ? '' : typeof c === 'string' ? c : c.map((/** @type {any} */ b) => b.text ?? '').join('');
  if (provider === 'openai')
    return messages.map((m) => ({
      role: m.role,
      content: text(m.content),
      ...(m.tool_calls
        ? { calls: m.tool_calls.map((/** @type {any} */ c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]) }
        : {}),
      ...(m.tool_call_id ? { id: m.tool_call_id } : {}),
    }));
  return messages.map((m) => ({
    role: m.role,
    blocks: (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content).map((/** @type {any} */ b) =>
      b.type === 'text'
        ? ['text', b.text]
        : b.type === 'thinking'
          ? ['thinking', b.thinking, b.signature]
          : b.type === 'tool_use'
            ? ['tool_use', b.id, b.name, b.input]
            : b.type === 'tool_result'
              ? ['tool_result', b.tool_use_id, text(b.content)]
              : [b.type],
    ),
  }));
}
