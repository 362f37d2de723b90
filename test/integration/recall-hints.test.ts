import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { markers } from '../../src/history/markers.js';
import { build } from '../support/app.js';

/**
 * Placeholders and summaries name the tool that gives an original back (issue 32): "call the
 * `recall` tool with art_…", short, the same bytes every time (a prompt cache keeps them), and
 * still read by expand.
 */

type Message = Record<string, unknown>;

async function post(t: Test, app: FastifyInstance, url: string, payload: object): Promise<Record<string, unknown>> {
  const res = await app.inject({ method: 'POST', url, payload });
  t.equal(res.statusCode, 200, `${url} answers 200`);
  return res.json();
}

const lines = (label: string, n: number) => `${label}\n${`${label}: a line of output\n`.repeat(n)}`;
const step = (i: number, output: string, name = 'bash', args: object = { command: `make part${i}` }): Message[] => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `c${i}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  },
  { role: 'tool', tool_call_id: `c${i}`, content: output },
];
const HINT = (id: string) => `call the \`recall\` tool with ${id}`;

t.test('a cleared result, a truncated middle and a cleared input each name the recall tool and their id', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const history = [
    { role: 'system', content: 'You are a build agent.' },
    { role: 'user', content: 'Build it.' },
    ...step(0, lines('cleared', 200)),
    ...step(1, lines('kept but long', 400), 'read_file', { path: 'a.txt' }),
    ...step(2, 'ok', 'write_file', { path: 'b.py', content: lines('print(1)', 200) }),
    ...step(3, 'done'),
    { role: 'assistant', content: 'Done.' },
  ];
  const options = {
    messages: history,
    keep_tool_uses: 1,
    clear_tool_inputs: true,
    truncate_tokens: 200,
    rules: [{ tool: 'read_file', keep_last: 1 }],
  };
  const out = await post(t, app, '/v1/compact', options);
  const messages = out.messages as Message[];
  const cleared = String(messages[3]?.content);
  const id = /^\[compactor:(art_[0-9a-f]{24}) mac=/.exec(cleared)?.[1] ?? 'none';
  t.match(
    cleared,
    new RegExp(`\\(\\d+ tokens offloaded; ${HINT(id).replace(/[`]/g, '.')} to see them\\)$`),
    'the cleared result',
  );
  const truncated = String(messages[5]?.content);
  const middle = /\[compactor:(art_[0-9a-f]{24}) mac=/.exec(truncated)?.[1] ?? 'none';
  t.ok(truncated.includes(`${HINT(middle)} for the full output`), 'the truncated middle');
  const calls = (messages[6]?.tool_calls ?? []) as { function: { arguments: string } }[];
  const args = JSON.parse(calls[0]?.function.arguments ?? '{}');
  const input = /\[compactor:(art_[0-9a-f]{24}) mac=/.exec(args.content)?.[1] ?? 'none';
  t.ok(String(args.content).endsWith(`tokens; ${HINT(input)} to see them)`), 'the cleared input');
  const again = await post(t, app, '/v1/compact', options);
  t.equal(JSON.stringify(again.messages), JSON.stringify(messages), 'the same bytes every time');
  const expanded = await post(t, app, '/v1/expand', { messages });
  t.same(expanded.messages, history, 'expand still reads them');
});

t.test("a summary's marker line names the recall tool with the summarized range's id", async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const history = [
    { role: 'system', content: 'You are a build agent.' },
    { role: 'user', content: 'Build it.' },
    ...Array.from({ length: 12 }, (_, i) => step(i, lines(`part ${i} built`, 20))).flat(),
    { role: 'assistant', content: 'Done.' },
  ];
  const out = await post(t, app, '/v1/summarize', { messages: history, keep: { messages: 4 } });
  t.equal(out.applied, true);
  const summary = (out.messages as Message[]).find((m) => String(m.content).startsWith('[compactor:summary '));
  const first = String(summary?.content).split('\n')[0] ?? '';
  const id = /^\[compactor:summary (art_[0-9a-f]{24}) /.exec(first)?.[1] ?? 'none';
  t.match(first, / mac=[0-9a-f]{16}\] \(the messages it replaces: call the `recall` tool with art_[0-9a-f]{24}\)$/);
  t.ok(first.endsWith(`${id})`), 'the id the marker names');
  const expanded = await post(t, app, '/v1/expand', { messages: out.messages as unknown[] });
  t.same(expanded.messages, history, 'expand still reads it');
  const sections = await post(t, app, '/v1/summarize', { messages: history, mode: 'sections', keep: { messages: 4 } });
  const text = JSON.stringify(sections.messages);
  if (text.includes('[compactor:section-summary art_'))
    t.match(
      text,
      /\[compactor:section-summary (art_[0-9a-f]{24}) mac=[0-9a-f]{16}\] \(the messages it replaces: call the `recall` tool with \1\)/,
    );
});

t.test('a marker line written before the hint still verifies; one whose hint was edited does not', async (t) => {
  const m = markers('s'.repeat(32), 'scope');
  const id = `art_${'ab'.repeat(12)}`;
  for (const [kind, text, read] of [
    ['summary', m.summary(id, 'own', 3, 'body'), m.readSummary],
    ['section', m.section(id, 'body'), m.readSection],
    ['qa', m.qaHeader(id, 'body'), m.readQaHeader],
  ] as const) {
    t.ok(text.split('\n')[0]?.endsWith(`call the \`recall\` tool with ${id})`), `${kind}: the line names the tool`);
    t.match(read(text), { id, text: 'body' }, `${kind}: verifies`);
    const older = text.replace(/ \(the messages it replaces: [^\n]*\)\n/, '\n');
    t.not(older, text);
    t.match(read(older), { id, text: 'body' }, `${kind}: as written before the hint, verifies`);
    t.equal(read(text.replace('call the `recall` tool', 'run the `shell` tool')), undefined, `${kind}: edited, does not`);
  }
});
