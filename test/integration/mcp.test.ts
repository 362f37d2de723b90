import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { build } from '../support/app.js';
import { listen } from '../support/net.js';

/**
 * `/mcp` through the MCP SDK's own client (streamable HTTP): the tools listed, originals recalled
 * byte-exact in every format and kind, paging, another key's and an unknown id explained.
 */

const big = (tag: string) => Array.from({ length: 600 }, (_, i) => `${tag} line ${i}: src/pkg/mod_${i}.py ok`).join('\n');

async function client(t: Test, base: string, headers: Record<string, string> = {}): Promise<Client> {
  const c = new Client({ name: 'compactor-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  t.teardown(() => c.close());
  return c;
}

const textOf = (result: unknown): string => (result as { content: { text: string }[] }).content[0]?.text ?? '';

async function compacted(app: FastifyInstance, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { keep_tool_uses: 0, min_tokens: 1, ...body },
    headers,
  });
  const json = res.json() as { artifacts: { id: string; kind: string }[]; messages: unknown[] };
  return json;
}

t.test('the tools, and the originals of cleared tool results in every format, byte-exact', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const { base } = await listen(app);
  const mcp = await client(t, base);
  const tools = await mcp.listTools();
  t.same(tools.tools.map((x) => x.name).sort(), ['recall', 'search']);
  t.match(
    tools.tools.find((x) => x.name === 'recall')?.description,
    /art_/,
    'the recall description tells a model what an id looks like',
  );

  const histories: [string, unknown[], string][] = [
    [
      'openai-chat',
      [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.py"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: big('chat') },
        { role: 'assistant', content: 'done' },
      ],
      big('chat'),
    ],
    [
      'anthropic',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: big('anthropic') }] },
        { role: 'assistant', content: 'done' },
      ],
      big('anthropic'),
    ],
    [
      'openai-responses',
      [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
        { type: 'function_call_output', call_id: 'c1', output: big('responses') },
        { role: 'assistant', content: 'done' },
      ],
      big('responses'),
    ],
    [
      'gemini',
      [
        { role: 'user', parts: [{ text: 'go' }] },
        { role: 'model', parts: [{ functionCall: { name: 'ls', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'ls', response: { output: big('gemini') } } }] },
        { role: 'model', parts: [{ text: 'done' }] },
      ],
      big('gemini'),
    ],
  ];
  for (const [format, messages, original] of histories) {
    // The request offers the recall tool (as an SDK app wiring the MCP server does): the placeholder names it.
    const out = await compacted(app, { messages, format, recall_tool: 'recall' });
    const id = out.artifacts[0]?.id as string;
    t.ok(id, `${format}: an artifact`);
    t.ok(
      JSON.stringify(out.messages).includes(`call the \`recall\` tool with ${id}`),
      `${format}: the placeholder names the tool and the id`,
    );
    const result = await mcp.callTool({ name: 'recall', arguments: { id, max_tokens: 100_000 } });
    const body = textOf(result).split('--- original ---\n')[1] ?? '';
    t.equal(body, original, `${format}: recalled byte-exact`);
    t.match(textOf(result), /tool_result/, `${format}: says what it was`);
  }
});

t.test('paging, a summarized range, an unknown id and another key’s id', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: 'key-one-0123456789,key-two-0123456789' });
  const { base } = await listen(app);
  const one = await client(t, base, { authorization: 'Bearer key-one-0123456789' });
  const out = await compacted(
    app,
    {
      format: 'openai-chat',
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'cat', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: big('paged') },
        { role: 'assistant', content: 'done' },
      ],
    },
    { authorization: 'Bearer key-one-0123456789' },
  );
  const id = out.artifacts[0]?.id as string;
  let offset = 0;
  let whole = '';
  for (let pages = 0; pages < 100; pages++) {
    const page = textOf(await one.callTool({ name: 'recall', arguments: { id, offset, max_tokens: 1000 } }));
    const [, rest = ''] = page.split('--- original ---\n');
    const next = /offset (\d+) ---$/.exec(rest);
    whole += next ? rest.slice(0, rest.lastIndexOf('\n--- more:')) : rest;
    if (!next) break;
    offset = Number(next[1]);
  }
  t.equal(whole, big('paged'), 'the pages put together are the original');

  const unknown = await one.callTool({ name: 'recall', arguments: { id: 'art_000000000000000000000000' } });
  t.equal((unknown as { isError?: boolean }).isError, true, 'an unknown id is an error the model can read');
  t.match(textOf(unknown), /expired|another key/, 'and says why it may be');
  const two = await client(t, base, { 'x-compactor-key': 'key-two-0123456789' });
  const theirs = await two.callTool({ name: 'recall', arguments: { id } });
  t.equal((theirs as { isError?: boolean }).isError, true, 'another key’s id is unknown to this key');
  t.notMatch(textOf(theirs), 'paged line', 'and nothing of it shows');

  const refused = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(refused.status, 401, 'no key, no tools');

  const summarized = await app.inject({
    method: 'POST',
    url: '/v1/summarize',
    headers: { authorization: 'Bearer key-one-0123456789' },
    payload: {
      format: 'openai-chat',
      keep: { messages: 1 },
      messages: [
        { role: 'user', content: 'the task: fix src/app.ts' },
        {
          role: 'assistant',
          content: `I read src/app.ts and found the bug at line 42. ${'Then I read more of it. '.repeat(80)}`,
        },
        { role: 'user', content: `good, now the tests ${'please '.repeat(60)}` },
        { role: 'assistant', content: 'The tests pass.' },
      ],
    },
  });
  const rangeId = (summarized.json() as { summary: { id: string } }).summary.id;
  const range = textOf(await one.callTool({ name: 'recall', arguments: { id: rangeId } }));
  t.match(range, /summary_range/, 'a summarized range says what it is');
  t.match(range, /line 42/, 'and renders the messages it replaced');
});

t.test('search: exact text and RE2 expressions over the caller’s originals; a path a summary dropped is found', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const { base } = await listen(app);
  const mcp = await client(t, base);
  // A summarized range that mentions more paths than a summary keeps: some are dropped from it.
  const paths = Array.from({ length: 400 }, (_, i) => `vendor/deep/lib${i}/parser_v${i}.c`);
  const summarized = await app.inject({
    method: 'POST',
    url: '/v1/summarize',
    payload: {
      format: 'openai-chat',
      keep: { messages: 1 },
      messages: [
        { role: 'user', content: 'the task' },
        { role: 'assistant', content: paths.map((p, i) => `The crash ${i} comes from ${p} line ${i + 1000}.`).join('\n') },
        { role: 'user', content: 'and then?' },
        { role: 'assistant', content: 'Then we stopped.' },
      ],
    },
  });
  const summary = summarized.json() as { summary: { id: string; text: string } };
  const dropped = paths.findLast((p) => !summary.summary.text.includes(p)) as string;
  t.ok(dropped, `the summary dropped some paths (${dropped})`);
  const out = await compacted(app, {
    format: 'openai-chat',
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'grep', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: `${big('grep')}\nERROR E4711: disk quota exceeded on /srv/data` },
      { role: 'assistant', content: 'done' },
    ],
  });
  const found = textOf(await mcp.callTool({ name: 'search', arguments: { query: dropped } }));
  t.match(found, summary.summary.id, 'the summarized range is found by a path its summary dropped');
  t.match(found, `comes from ${dropped} line`, 'with the matching line');
  const regex = textOf(await mcp.callTool({ name: 'search', arguments: { query: 'E\\d{4}: disk', regex: true } }));
  t.match(regex, out.artifacts[0]?.id as string, 'a regular expression finds the cleared tool result');
  t.match(regex, 'ERROR E4711: disk quota exceeded on /srv/data');
  const none = await mcp.callTool({ name: 'search', arguments: { query: 'nowhere-to-be-found' } });
  t.match(textOf(none), /No original matches/);
  const bad = await mcp.callTool({ name: 'search', arguments: { query: '(a', regex: true } });
  t.equal((bad as { isError?: boolean }).isError, true, 'a pattern RE2 refuses is an error the model can read');
  // Backtracking engines take exponential time on this; RE2 is linear.
  const evil = await mcp.callTool({ name: 'search', arguments: { query: '(a+)+$', regex: true } });
  t.notOk((evil as { isError?: boolean }).isError, 'a pathological pattern is answered');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_mcp_calls_total\{tool="search",outcome="found"\} [2-9]/);
});

t.test('search within one conversation of the proxy (its x-compactor-conversation id)', async (t) => {
  const { FakeProvider } = await import('../support/fake-provider.js');
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    COMPACTOR_PROXY_OPTIONS: JSON.stringify({
      context_window: 100_000,
      target_tokens: 8000,
      limit: { tokens: 9000 },
      policy: 'tokens',
      // Compaction alone (no window): the placeholders stay in the conversation.
      compact: { keep_tool_uses: 0 },
    }),
  });
  const { base } = await listen(app);
  const conversations: string[] = [];
  for (const task of ['first task', 'second task']) {
    const messages: unknown[] = [{ role: 'user', content: task }];
    for (let s = 0; s < 4; s++) {
      messages.push({
        role: 'assistant',
        content: [{ type: 'tool_use', id: `t${s}`, name: 'Bash', input: { command: `cat ${s}` } }],
      });
      messages.push({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: `t${s}`, content: `${big(task)}\nmarker-${task}-${s}` }],
      });
    }
    const res = await fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-x' },
      body: JSON.stringify({ model: 'claude-opus-4-8', max_tokens: 100, messages }),
    });
    await res.text();
    t.equal(res.headers.get('x-compactor'), 'reduced', `${task}: reduced`);
    conversations.push(String(res.headers.get('x-compactor-conversation')));
  }
  const mcp = await client(t, base);
  const everywhere = textOf(await mcp.callTool({ name: 'search', arguments: { query: 'marker-', max_results: 50 } }));
  t.match(everywhere, 'marker-first task');
  t.match(everywhere, 'marker-second task');
  const one = textOf(
    await mcp.callTool({ name: 'search', arguments: { query: 'marker-', conversation: conversations[0], max_results: 50 } }),
  );
  t.match(one, 'marker-first task', 'its own originals');
  t.notMatch(one, 'marker-second task', 'not the other conversation’s');
});

t.test('search finds every kind of original compaction writes, a duplicate’s included', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const { base } = await listen(app);
  const mcp = await client(t, base);
  const same = `${big('twice')}\nTWICE-MARKER`;
  const call = (id: string) => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'cat', arguments: '{}' } }],
  });
  const out = await compacted(app, {
    format: 'openai-chat',
    messages: [
      { role: 'user', content: 'go' },
      call('c1'),
      { role: 'tool', tool_call_id: 'c1', content: same },
      call('c2'),
      { role: 'tool', tool_call_id: 'c2', content: same },
      { role: 'assistant', content: 'done' },
    ],
  });
  const duplicate = out.artifacts.find((a) => a.kind === 'tool_result_duplicate');
  t.ok(duplicate, 'compaction wrote a tool_result_duplicate');
  const found = textOf(await mcp.callTool({ name: 'search', arguments: { query: 'TWICE-MARKER', max_results: 50 } }));
  t.match(found, `${duplicate?.id} (tool_result_duplicate`, 'search finds it');
  const recalled = textOf(await mcp.callTool({ name: 'recall', arguments: { id: duplicate?.id as string } }));
  t.match(recalled, /a later call returned the same output/, 'recall says what it is, from the table of kinds');
});

t.test('a summarized range is recalled as its format’s adapter reads it: prose, calls, results', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const { base } = await listen(app);
  const mcp = await client(t, base);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/summarize',
    payload: {
      format: 'anthropic',
      keep: { messages: 1 },
      messages: [
        { role: 'user', content: 'the task: list the tree' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'ls -la /srv' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: big('tree') }] },
        { role: 'assistant', content: `The tree is listed. ${'More words. '.repeat(80)}` },
        { role: 'user', content: 'and now?' },
        { role: 'assistant', content: 'Done.' },
      ],
    },
  });
  const id = (res.json() as { summary: { id: string } }).summary.id;
  t.ok(id, 'a range was summarized');
  const range = textOf(await mcp.callTool({ name: 'recall', arguments: { id, max_tokens: 100_000 } }));
  t.match(range, /messages \(anthropic\)/, 'read as anthropic');
  t.match(range, '[assistant] The tree is listed.', 'prose');
  t.match(range, '[assistant] call Bash {"command":"ls -la /srv"}', 'a tool call with its arguments');
  t.match(range, '[tool] tree line 0: src/pkg/mod_0.py ok', 'a tool result as its text, not its JSON');
  t.notMatch(range, '"tool_result"', 'no wire JSON');
});
