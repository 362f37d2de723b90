import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { CompactorClient } from '@compactor/client';
import { recordingFetch, startCompactor } from '../../shared/compactor-service.mjs';
import { readFile, runAgent, SYSTEM, TOOLS, withCacheBreakpoint } from '../agent.mjs';
import { SCRIPT, startFakeAnthropic, violation } from '../fake-anthropic.mjs';

/** @type {Awaited<ReturnType<typeof startCompactor>>} */ let service;
/** @type {Awaited<ReturnType<typeof startFakeAnthropic>>} */ let fake;

before(async () => {
  [service, fake] = await Promise.all([startCompactor(), startFakeAnthropic()]);
});
after(async () => {
  await Promise.all([service?.stop(), fake?.close()]);
});

/** A real user message starts a turn; one that only carries tool results does not. */
const isRealUser = (/** @type {any} */ m) =>
  m.role === 'user' && (typeof m.content === 'string' || m.content.some((/** @type {any} */ b) => b.type !== 'tool_result'));

test('a tool-use loop with thinking and caching, fitted by Compactor before every call', async () => {
  const recorder = recordingFetch();
  const compactor = new CompactorClient({ baseUrl: service.url, fetch: recorder.fetch });
  const anthropic = new Anthropic({ apiKey: 'sk-ant-fake', baseURL: fake.url, maxRetries: 0 });
  const tasks = ['Explain how this server is put together.', 'Now explain when a reduction is deferred.'];
  const { answers } = await runAgent({
    anthropic,
    compactor,
    model: 'claude-sonnet-4-5',
    contextWindow: 12_000,
    tasks,
    log: (line) => process.env.VERBOSE && console.log(line),
  });
  const fits = recorder.calls.filter((c) => c.path === '/v1/fit');
  const calls = fake.requests;

  // (b) the agent finished both tasks.
  assert.deepEqual(
    answers,
    SCRIPT.map((s) => s.answer),
  );
  assert.match(answers.at(-1) ?? '', /^DONE/);
  assert.equal(
    calls.length,
    SCRIPT.reduce((n, s) => n + s.reads.length + 1, 0),
  );
  assert.equal(fits.length, calls.length, 'one fit call before every model call');

  // (a) the model received exactly the history fit returned (plus the per-request cache breakpoint).
  for (const [i, fit] of fits.entries()) {
    assert.equal(fit.status, 200, JSON.stringify(fit.answer));
    assert.deepEqual(calls[i].messages, withCacheBreakpoint(fit.answer.messages), `model call ${i}`);
    assert.deepEqual(calls[i].system, SYSTEM);
    assert.deepEqual(calls[i].tools, TOOLS);
  }
  const reduced = fits.filter((f) => f.answer.applied);
  assert.ok(reduced.length >= 1, 'fit reduced the history at least once');
  for (const f of reduced) assert.ok(f.answer.tokens.after < f.answer.tokens.before);
  // What was cleared is a placeholder, not the file: the model saw less than the agent had.
  const sentText = JSON.stringify(calls.at(-1)?.messages);
  assert.ok(sentText.includes('[compactor:art_'), 'the last call carries placeholders');
  assert.ok(!sentText.includes(JSON.stringify(readFile('src/server.ts')).slice(1, -1)), 'the first file read was cleared');

  // (c) each fit call carried the usage of the previous model call, as the SDK returned it, with messages_covered.
  assert.equal(fits[0].body.usage, undefined);
  for (let i = 1; i < fits.length; i++) {
    const usage = fake.replies[i - 1].usage;
    assert.ok(usage.cache_read_input_tokens > 0 || usage.cache_creation_input_tokens > 0);
    assert.deepEqual(fits[i].body.usage, { ...usage, messages_covered: calls[i - 1].messages.length + 1 }, `fit call ${i}`);
  }
  assert.ok(
    fake.replies.some((r) => r.usage.cache_read_input_tokens > 1000),
    'the prompt cache was read',
  );

  // Anthropic's rules held on every request (the fake answers 400 otherwise; checked again here).
  for (const [i, body] of calls.entries()) assert.equal(violation(body), undefined, `model call ${i}`);

  // Signatures: every thinking block of the turn in progress comes back byte-identical to what the model sent.
  /** @type {Map<string, any[]>} */
  const emitted = new Map();
  for (const r of fake.replies) for (const b of r.content) if (b.type === 'tool_use') emitted.set(b.id, r.content);
  let checked = 0;
  for (const body of calls) {
    const start = body.messages.findLastIndex(isRealUser);
    const turn = body.messages.slice(start + 1).filter((/** @type {any} */ m) => m.role === 'assistant');
    for (const [j, m] of turn.entries()) {
      const id = m.content.find((/** @type {any} */ b) => b.type === 'tool_use')?.id;
      const original = emitted.get(id);
      assert.ok(original, `assistant message ${id} was sent by the model`);
      if (j === 0) assert.equal(m.content[0].type, 'thinking', 'the loop starts with its thinking block');
      const thinking = (/** @type {any[]} */ c) => c.filter((b) => b.type === 'thinking').map((b) => JSON.stringify(b));
      assert.deepEqual(thinking(m.content), thinking(original), `thinking of ${id} byte-identical`);
      checked++;
    }
  }
  assert.ok(checked >= 6);
  // Old turns' thinking was removed whole (clear_thinking), never edited: the last call has the second task's only.
  const last = calls.at(-1);
  const thinkingIn = (/** @type {any[]} */ ms) =>
    ms.flatMap((m) => (typeof m.content === 'string' ? [] : m.content)).filter((b) => b.type === 'thinking');
  const turn2 = last.messages.findLastIndex(isRealUser);
  assert.equal(thinkingIn(last.messages.slice(0, turn2)).length, 0, 'the finished turn lost its thinking');
  assert.equal(thinkingIn(last.messages.slice(turn2)).length, SCRIPT[1].reads.length, 'the turn in progress kept all of it');
});

test('the fake model rejects what Anthropic rejects (so the test above can fail)', async () => {
  const anthropic = new Anthropic({ apiKey: 'sk-ant-fake', baseURL: fake.url, maxRetries: 0 });
  const thinking = { type: 'thinking', thinking: 'edited', signature: 'not-the-signature' };
  const call = { type: 'tool_use', id: 'toolu_x', name: 'read_file', input: { path: 'a' } };
  const result = { type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' };
  /** @type {any[][]} */
  const bad = [
    [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [thinking, call] },
      { role: 'user', content: [result] },
    ],
    [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [call] },
      { role: 'user', content: [result] },
    ],
    [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [call] },
      { role: 'user', content: [{ type: 'text', text: 'hm' }, result] },
    ],
    [
      { role: 'user', content: 'go' },
      { role: 'user', content: 'again' },
    ],
  ];
  for (const messages of bad) {
    await assert.rejects(
      anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages,
      }),
      (/** @type {any} */ error) => error instanceof Anthropic.BadRequestError,
    );
  }
});
