import t from 'tap';
import { build } from '../support/app.js';
import { type CapturedHistory, checkHistory, ENDPOINTS } from '../support/clients.js';
import type { JsonValue } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

// The checks the real-clients system test applies (test/support/clients/checks.ts), against the
// real app on a listening port with histories shaped like the agents' own: the endpoint options
// are accepted, a good history passes everything, and reductions do happen.

const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
const { base } = await listen(app);

const output = (step: number) => Array.from({ length: 1500 + step }, (_, i) => String(i + 1)).join('\n');

function anthropicHistory(steps: number): JsonValue[] {
  const messages: JsonValue[] = [{ role: 'user', content: [{ type: 'text', text: 'Count in the shell.' }] }];
  for (let s = 0; s < steps; s++) {
    const id = `toolu_${s}`;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: `Step ${s + 1}.` },
        { type: 'tool_use', id, name: 'Bash', input: { command: `seq 1 ${1500 + s}` } },
      ],
    });
    messages.push({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: id,
          content: output(s),
          ...(s === steps - 1 ? { cache_control: { type: 'ephemeral' } } : {}),
        },
      ],
    });
  }
  return messages;
}

function responsesHistory(steps: number): JsonValue[] {
  const items: JsonValue[] = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Count in the shell.' }] },
  ];
  for (let s = 0; s < steps; s++) {
    const call_id = `call_${s}`;
    items.push({
      type: 'function_call',
      id: `fc_${s}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: `seq 1 ${1500 + s}` }),
      call_id,
    });
    items.push({ type: 'function_call_output', call_id, output: output(s) });
  }
  return items;
}

const bash = {
  name: 'Bash',
  description: 'Run a command',
  input_schema: { type: 'object', properties: { command: { type: 'string' } } },
};
const cases: CapturedHistory[] = [
  {
    client: 'claude-code',
    version: 'synthetic',
    request: 4,
    format: 'anthropic',
    messages: anthropicHistory(3),
    context: { system: [{ type: 'text', text: 'You are a coding agent.' }], tools: [bash], model: 'claude-sonnet-4-5' },
  },
  {
    client: 'codex',
    version: 'synthetic',
    request: 4,
    format: 'openai-responses',
    messages: responsesHistory(3),
    context: { model: 'gpt-5.5' },
  },
];

for (const history of cases) {
  t.test(`every check passes on a ${history.format} history shaped like ${history.client}'s`, async (t) => {
    const results = await checkHistory(base, history);
    t.same(
      results.map((r) => r.endpoint),
      [...ENDPOINTS],
    );
    for (const r of results) t.same(r.problems, [], r.label);
    for (const r of results.filter((x) => x.endpoint !== 'tokens' && x.endpoint !== 'validate')) {
      t.equal(r.applied, true, `${r.label} reduced the history`);
    }
  });
}

t.test('a refused history is reported with its status and the problem’s detail', async (t) => {
  const broken: CapturedHistory = { ...cases[0], messages: [{ role: 'robot', content: 'x' }] } as CapturedHistory;
  const results = await checkHistory(base, broken);
  for (const r of results) {
    t.equal(r.ok, false);
    t.equal(r.status, 400, r.label);
    t.match(r.problems[0], /HTTP 400 CMP_ERR_/);
  }
});
