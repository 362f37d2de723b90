import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { build } from '../support/app.js';

/**
 * A signed placeholder restores only into the call it was written for (issue 29): its MAC covers
 * the call's id, tool, arguments and rank among identical calls, and each placeholder restores at
 * most once. One copied elsewhere stays as it is and `warnings` says so; histories that really
 * repeat a call still round-trip byte-exact.
 */

type Message = Record<string, unknown>;

async function post(t: Test, app: FastifyInstance, url: string, payload: object): Promise<Record<string, unknown>> {
  const res = await app.inject({ method: 'POST', url, payload });
  t.equal(res.statusCode, 200, `${url} answers 200`);
  return res.json();
}

const chatCall = (id: string, command: string, name = 'bash'): Message => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify({ command }) } }],
});
const chatResult = (id: string, content: string): Message => ({ role: 'tool', tool_call_id: id, content });
const lines = (label: string, n = 200) => `${label}\n${`${label}: a line of output\n`.repeat(n)}`;

t.test('chat: the placeholder of one call_1 copied into the result of another call_1 is not restored there', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const history = [
    { role: 'system', content: 'You are a shell agent.' },
    { role: 'user', content: 'Look around.' },
    chatCall('call_1', 'cat secrets.txt'),
    chatResult('call_1', lines('SECRET=hunter2')),
    chatCall('call_1', 'echo hi'),
    chatResult('call_1', lines('hi')),
    chatCall('call_9', 'ls'),
    chatResult('call_9', 'README.md'),
    { role: 'assistant', content: 'Done.' },
  ];
  const compacted = (await post(t, app, '/v1/compact', { messages: history, keep_tool_uses: 1 })).messages as Message[];
  t.match(compacted[3]?.content, /^\[compactor:art_/, 'the first result is a placeholder');
  t.match(compacted[5]?.content, /^\[compactor:art_/, 'the second too');
  const own = await post(t, app, '/v1/expand', { messages: compacted });
  t.same(own.messages, history, 'as compacted, each restores into its own call');
  t.same(own.warnings, []);
  const moved = compacted.map((m, i) => (i === 5 ? { ...m, content: compacted[3]?.content } : m));
  const out = await post(t, app, '/v1/expand', { messages: moved });
  const messages = out.messages as Message[];
  t.same(messages[3], history[3], "the first call's own placeholder is restored");
  t.same(messages[5], moved[5], 'the copy in the other call stays as it is');
  t.notMatch(JSON.stringify(messages[5]), /hunter2/, 'cat secrets.txt never reaches echo hi');
  t.match(out.warnings, [{ code: 'placeholder_not_verified' }]);
});

t.test("gemini: message 4's functionResponse placeholder copied into message 10's is not restored there", async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const turn = (command: string, output: string) => [
    { role: 'model', parts: [{ functionCall: { name: 'run_shell', args: { command } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'run_shell', response: { output } } }] },
  ];
  const history = [
    { role: 'user', parts: [{ text: 'Fix the tests.' }] },
    { role: 'model', parts: [{ text: 'Looking.' }] },
    { role: 'user', parts: [{ text: 'Go on.' }] },
    ...turn('pytest -q', lines('FAILED test_a.py::test_private')),
    ...turn('ls', lines('file', 60)),
    ...turn('cat a.py', lines('x = 1', 80)),
    ...turn('grep -rn TODO .', lines('a.py:1: TODO', 90)),
    ...turn('git status', 'clean'),
    { role: 'model', parts: [{ text: 'Done.' }] },
  ];
  const compacted = (await post(t, app, '/v1/compact', { messages: history, format: 'gemini', keep_tool_uses: 1 })).messages as {
    parts: { functionResponse?: { response: { output: string } } }[];
  }[];
  const output = (i: number) => compacted[i]?.parts[0]?.functionResponse?.response.output ?? '';
  t.match(output(4), /^\[compactor:art_/, 'pytest -q is a placeholder');
  t.match(output(10), /^\[compactor:art_/, 'grep is a placeholder');
  const own = await post(t, app, '/v1/expand', { messages: compacted, format: 'gemini' });
  t.same(own.messages, history, 'as compacted, byte-exact');
  const moved = structuredClone(compacted);
  const target = moved[10]?.parts[0]?.functionResponse;
  if (target) target.response.output = output(4);
  const out = await post(t, app, '/v1/expand', { messages: moved, format: 'gemini' });
  const messages = out.messages as unknown[];
  t.same(messages[4], history[4], "pytest's own placeholder is restored");
  t.same(messages[10], moved[10], 'the copy under grep stays as it is');
  t.notMatch(JSON.stringify(messages[10]), /test_private/, "pytest's output never reaches grep's slot");
  t.match(out.warnings, [{ code: 'placeholder_not_verified' }]);
});

t.test('a history that repeats a call has a placeholder of its own for each repetition: byte-exact', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  // Gemini without ids: every call is run_shell#0; the same command, the same output, three times.
  const turn = (command: string, output: string) => [
    { role: 'model', parts: [{ functionCall: { name: 'run_shell', args: { command } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'run_shell', response: { output } } }] },
  ];
  const same = lines('On branch main, nothing to commit', 80);
  const history = [
    { role: 'user', parts: [{ text: 'Watch the repository.' }] },
    ...turn('git status', same),
    ...turn('git status', same),
    ...turn('git status', same),
    ...turn('git log -1', lines('commit 0123abc', 40)),
    ...turn('date', 'today'),
    { role: 'model', parts: [{ text: 'Done.' }] },
  ];
  for (const dedupe of [true, false]) {
    const compacted = await post(t, app, '/v1/compact', { messages: history, format: 'gemini', keep_tool_uses: 1, dedupe });
    t.ok((compacted.artifacts as unknown[]).length >= 3, `dedupe ${dedupe}: the repeated results are offloaded`);
    const out = await post(t, app, '/v1/expand', { messages: compacted.messages as unknown[], format: 'gemini' });
    t.same(out.messages, history, `dedupe ${dedupe}: expand(compact(x)) == x`);
    t.same(out.warnings, []);
    const again = await post(t, app, '/v1/compact', {
      messages: compacted.messages as unknown[],
      format: 'gemini',
      keep_tool_uses: 1,
      dedupe,
    });
    t.same(again.messages, compacted.messages, `dedupe ${dedupe}: compacting the output again changes nothing`);
  }
});

t.test('a call whose arguments and result are both cleared in one run restores byte-exact, and stays compacted', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const write = (id: string, path: string, content: string): Message => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'write_file', arguments: JSON.stringify({ path, content }) } }],
  });
  const body = lines('def main(): pass', 120);
  const history = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Write the files.' },
    // The same call id twice with the same arguments: identical calls, ranked apart.
    write('w1', 'a.py', body),
    chatResult('w1', lines('wrote a.py')),
    write('w1', 'a.py', body),
    chatResult('w1', lines('wrote a.py')),
    write('w2', 'b.py', lines('import os', 120)),
    chatResult('w2', lines('wrote b.py')),
    chatCall('c9', 'ls'),
    chatResult('c9', 'a.py b.py'),
    { role: 'assistant', content: 'Done.' },
  ];
  const options = { keep_tool_uses: 1, clear_tool_inputs: true, min_tokens: 50 };
  const compacted = await post(t, app, '/v1/compact', { messages: history, ...options });
  const messages = compacted.messages as Message[];
  t.match(JSON.stringify(messages[2]), /\[compactor:art_[0-9a-f]{24} mac=/, 'the first call is cleared');
  t.match(messages[3]?.content, /^\[compactor:art_/, 'and its result');
  const out = await post(t, app, '/v1/expand', { messages });
  t.same(out.messages, history, 'expand(compact(x)) == x');
  t.same(out.warnings, []);
  const again = await post(t, app, '/v1/compact', { messages, ...options });
  t.same(again.messages, messages, 'compacting the output again changes nothing');
});
