import t from 'tap';
import { buildWithLlm } from '../support/app.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * Histories shaped as today's agents send them (the texts are ours; the shapes are Claude Code
 * 2.1's, Codex CLI 0.169's): through every endpoint of the real app, 200, valid, what is kept
 * byte-identical, and expand byte-exact. The real clients run in test/system/real-clients.test.ts.
 */

const output = (step: number) => Array.from({ length: 300 }, (_, i) => `line ${step}.${i}: ok`).join('\n');

/** Claude Code: the task (a reminder block first), its environment as a system message, Bash steps. */
function claudeCode(steps: number): { messages: unknown[]; system: unknown[]; tools: unknown[] } {
  const messages: unknown[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: '<system-reminder>\nA reminder of ours.\n</system-reminder>' },
        { type: 'text', text: 'Count the lines of every file, then summarize.' },
      ],
    },
    { role: 'system', content: '# Environment\n - Primary working directory: /work\n - Platform: linux' },
  ];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${s}`, name: 'Bash', input: { command: `wc -l part${s}`, description: 'count' } }],
    });
    messages.push({
      role: 'user',
      content: [
        {
          tool_use_id: `toolu_${s}`,
          type: 'tool_result',
          content: output(s),
          ...(s === steps - 1 ? { cache_control: { type: 'ephemeral' } } : {}),
        },
      ],
    });
  }
  const system = [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1' },
    { type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } },
  ];
  const tools = [
    { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
  ];
  return { messages, system, tools };
}

/** Codex: two developer messages, the environment and the task as user messages, exec_command calls. */
function codex(steps: number): unknown[] {
  const items: unknown[] = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>full access</permissions>' }] },
    {
      type: 'message',
      role: 'developer',
      content: [{ type: 'input_text', text: '<collaboration_mode>exec</collaboration_mode>' }],
    },
    {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: '<environment_context>cwd /work</environment_context>' }],
    },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Count the lines.' }] },
  ];
  for (let s = 0; s < steps; s++) {
    items.push({ type: 'reasoning', id: `rs_${s}`, summary: [], encrypted_content: `gAAAA${s}` });
    items.push({
      type: 'function_call',
      call_id: `call_${s}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: `wc -l part${s}` }),
    });
    items.push({ type: 'function_call_output', call_id: `call_${s}`, output: output(s) });
  }
  items.push({ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'The user switched to plan mode.' }] });
  return items;
}

const json = (v: unknown) => JSON.stringify(v);

t.test('Claude Code: every endpoint answers 200 with a valid history; the environment message stays with the task', async (t) => {
  const { app } = await buildWithLlm(t);
  const { messages, system, tools } = claudeCode(8);
  const base = { messages, system, tools, model: 'claude-opus-4-8' };
  const cases: [string, Record<string, unknown>][] = [
    ['/v1/tokens', {}],
    ['/v1/validate', {}],
    ['/v1/window', { keep: { messages: 4 } }],
    ['/v1/compact', { keep_tool_uses: 1, min_tokens: 10 }],
    ['/v1/summarize', { keep: { messages: 4 } }],
    ['/v1/summarize', { mode: 'sections', keep_sections: 1, max_pair_tokens: 100, max_section_tokens: 2000 }],
    ['/v1/fit', { target_tokens: 3000, policy: 'tokens' }],
    ['/v1/fit', { target_tokens: 6000, policy: 'tokens', window: { keep: { messages: 4 } } }],
  ];
  for (const [url, options] of cases) {
    const res = await app.inject({ method: 'POST', url, payload: { ...base, ...options } });
    t.equal(res.statusCode, 200, `${url}: 200 (${res.body.slice(0, 200)})`);
    const body = res.json() as {
      messages?: unknown[];
      valid?: boolean;
      actions?: { index: number; action: string }[];
      total?: number;
      summary?: { role: string } | null;
    };
    if (url === '/v1/validate') {
      t.ok(body.valid, 'the history is valid as Claude Code sends it');
      continue;
    }
    if (url === '/v1/tokens') {
      t.ok((body.total ?? 0) > 0, 'counted');
      continue;
    }
    const out = body.messages as unknown[];
    const check = await app.inject({ method: 'POST', url: '/v1/validate', payload: { messages: out, format: 'anthropic' } });
    t.ok((check.json() as { valid: boolean }).valid, `${url}: the output is valid (${check.body.slice(0, 200)})`);
    t.same(schemaErrors('anthropic', out), [], `${url}: the output passes Anthropic's schema`);
    t.equal(json(out[1]), json(messages[1]), `${url}: the environment message is kept byte-identical at its place`);
    for (const a of body.actions ?? []) {
      if (a.action === 'keep')
        t.ok(
          out.some((m) => json(m) === json(messages[a.index])),
          `${url}: kept message ${a.index} byte-identical`,
        );
    }
    if (url === '/v1/summarize' && body.summary)
      t.equal(body.summary.role, 'user (joined)', 'the summary joins the task message');
    // The window drops: what it dropped is gone (fit's last resort too).
    if (!(body.actions ?? []).some((a) => a.action === 'drop')) {
      const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: out, format: 'anthropic' } });
      t.equal(
        json((expanded.json() as { messages: unknown[] }).messages),
        json(messages),
        `${url}: expand gives the history back byte-exact`,
      );
    }
  }
});

t.test('Codex: developer messages in the head and after it; a later one is kept at its place', async (t) => {
  const { app } = await buildWithLlm(t);
  const messages = codex(8);
  for (const [url, options] of [
    ['/v1/window', { keep: { messages: 2 } }],
    ['/v1/summarize', { keep: { messages: 2 } }],
    ['/v1/fit', { target_tokens: 2000, policy: 'tokens' }],
  ] as const) {
    const res = await app.inject({ method: 'POST', url, payload: { messages, model: 'gpt-5.5-codex', ...options } });
    t.equal(res.statusCode, 200, `${url}: 200`);
    const out = (res.json() as { messages: unknown[] }).messages;
    t.equal(json(out.at(-1)), json(messages.at(-1)), `${url}: the later developer message is kept, last`);
    t.equal(json(out.slice(0, 2)), json(messages.slice(0, 2)), `${url}: the head is kept`);
    t.same(schemaErrors('openai-responses', out), [], `${url}: the output passes the Responses schema`);
  }
});
