/**
 * Starts Compactor (`node ../../../dist/server.js`, memory store, a free port) and the fake model,
 * runs the LangChain agent over two user turns with tool calls, and checks that
 * (a) the model received the history fit returned, (b) the agent finished its task, and
 * (c) the provider usage of each call reached Compactor on the next fit call.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompactorClient, type FetchLike } from '@compactor/client';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { startCompactor } from '../../shared/compactor-service.mjs';
import { buildAgent } from '../agent.js';
import { type FakeModel, type ScriptedReply, startFakeModel } from '../fake-model.js';

const read = (path: string) => ({ name: 'read_file', args: { path } });

const script: ScriptedReply[] = [
  { toolCalls: [read('src/parser.ts')] },
  { toolCalls: [read('src/lexer.ts')] },
  { toolCalls: [read('test/parser.test.ts')] },
  { toolCalls: [read('src/tokens.ts')] },
  { answer: 'The lexer drops the trailing newline token, so the parser never closes the last statement.' },
  { toolCalls: [read('test/lexer.test.ts')] },
  { toolCalls: [read('src/index.ts')] },
  { toolCalls: [{ name: 'write_file', args: { path: 'test/newline.test.ts', content: "test('newline', () => {});" } }] },
  { answer: 'Added test/newline.test.ts, which fails before the fix and passes after it.' },
];

let service: { url: string; stop: () => Promise<void> } | undefined;
let baseUrl = '';
let fake: FakeModel;

before(async () => {
  service = await startCompactor();
  baseUrl = service.url;
  fake = await startFakeModel(script);
});

after(async () => {
  await fake?.close();
  await service?.stop();
});

test('a LangChain agent fits its history with Compactor before each model call', async () => {
  // What the service received and answered, recorded by wrapping the client's fetch.
  const sent: Record<string, unknown>[] = [];
  const answered: Record<string, unknown>[] = [];
  const recordingFetch: FetchLike = async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.text();
    if (url.endsWith('/v1/fit')) {
      sent.push(JSON.parse(init.body ?? '{}'));
      answered.push(JSON.parse(text));
    }
    return { status: res.status, ok: res.ok, headers: res.headers, text: async () => text };
  };
  const compactor = new CompactorClient({ baseUrl, fetch: recordingFetch });
  const agent = buildAgent({
    baseURL: fake.url,
    apiKey: 'fake-key',
    model: 'gpt-4o',
    compactor,
    // A small window, so that the history outgrows it within the run and fit has to reduce.
    fit: { context_window: 12_000, target_fraction: 0.7 },
  });

  const first = await agent.invoke({ messages: [new HumanMessage('test/parser.test.ts fails. Find out why.')] });
  const second = await agent.invoke({ messages: [...first.messages, new HumanMessage('Add a test for it.')] });

  // (b) the agent finished its task: every scripted reply was used, the last message is the answer.
  assert.equal(fake.requests.length, script.length);
  const final = second.messages.at(-1);
  assert.ok(final && AIMessage.isInstance(final) && !final.tool_calls?.length);
  assert.match(String(final.content), /Added test\/newline\.test\.ts/);

  // (a) one fit call per model call, and each model call carried the history fit returned
  // (after the system prompt, which createAgent adds at call time and is not in state).
  assert.equal(answered.length, fake.requests.length);
  const reductions = answered.filter((a) => a.applied === true);
  assert.ok(reductions.length >= 1, `fit never reduced: ${answered.map((a) => a.reason).join(', ')}`);
  for (const [i, request] of fake.requests.entries()) {
    assert.equal(request.messages[0]?.role, 'system');
    assert.deepEqual(request.messages.slice(1), answered[i]?.messages, `model call ${i + 1}`);
  }
  // The reduced history is the agent's own from then on: after the first turn (where fit cleared an
  // old tool result) its state holds Compactor's placeholder, a ToolMessage with its tool_call_id.
  const placeholders = first.messages.filter((m) => ToolMessage.isInstance(m) && String(m.content).startsWith('[compactor:'));
  assert.ok(placeholders.length >= 1, 'no placeholder in the agent state');
  for (const m of placeholders) assert.match((m as ToolMessage).tool_call_id, /^call_\d+_\d+$/);
  for (const a of reductions) {
    const tokens = a.tokens as { before: number; after: number };
    assert.ok(tokens.after < tokens.before);
  }

  // (c) the provider's usage of call i reached Compactor on fit call i + 1, cached tokens included,
  // with messages_covered = the history the model saw plus its reply.
  assert.equal(sent[0]?.usage, undefined);
  for (let i = 1; i < sent.length; i++) {
    const { messages_covered, ...usage } = (sent[i]?.usage ?? {}) as Record<string, unknown>;
    assert.deepEqual(usage, fake.replies[i - 1]?.usage, `usage on fit call ${i + 1}`);
    assert.equal(messages_covered, (fake.requests[i - 1]?.messages.length ?? 0) - 1 + 1);
  }
  assert.ok(
    fake.replies.some((r) => ((r.usage.prompt_tokens_details as { cached_tokens: number }).cached_tokens ?? 0) > 0),
    'no call reported cached tokens',
  );

  const summary = answered.map((a, i) => {
    const t = a.tokens as { before: number; after: number };
    const stages = (a.stages as { strategy: string; applied: boolean }[]).filter((s) => s.applied).map((s) => s.strategy);
    return `call ${i + 1}: ${a.applied ? `reduced ${t.before} -> ${t.after} (${stages.join(', ')})` : `kept ${t.before} (${a.reason})`}`;
  });
  console.log(summary.join('\n'));
});
