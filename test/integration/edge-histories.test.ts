/**
 * Inputs from a black-box trial that used to answer 500: histories with nothing but system
 * messages, a summary request as the last message, placeholder templates naming built-in
 * properties, tool arguments nested thousands of levels deep inside their JSON string, and deeply
 * nested inline artifacts. Each is a 4xx problem or a 200 that says what it did, never a 500.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { SUMMARY_REQUEST } from '../../src/history/vocabulary.js';
import { build } from '../support/app.js';
import { violationsOf } from '../support/invariants.js';

const post = (app: FastifyInstance, url: string, payload: unknown) =>
  app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> });

type Fmt = 'openai-chat' | 'anthropic' | 'openai-responses' | 'gemini';
const user: Record<Fmt, (text: string) => unknown> = {
  'openai-chat': (text) => ({ role: 'user', content: text }),
  anthropic: (text) => ({ role: 'user', content: text }),
  'openai-responses': (text) => ({ role: 'user', content: text }),
  gemini: (text) => ({ role: 'user', parts: [{ text }] }),
};
const assistant: Record<Fmt, (text: string) => unknown> = {
  'openai-chat': (text) => ({ role: 'assistant', content: text }),
  anthropic: (text) => ({ role: 'assistant', content: [{ type: 'text', text }] }),
  'openai-responses': (text) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }),
  gemini: (text) => ({ role: 'model', parts: [{ text }] }),
};
const head: Record<Fmt, unknown[]> = {
  'openai-chat': [{ role: 'system', content: 'You are an agent.' }],
  anthropic: [],
  'openai-responses': [{ role: 'developer', content: 'You are an agent.' }],
  gemini: [],
};

t.test('a history of only system (and developer) messages: summarize and fit say there is nothing to do', async (t) => {
  const app = await build(t);
  const histories = [
    [{ role: 'system', content: 'You are an agent.' }],
    [
      { role: 'system', content: 'You are an agent.' },
      { role: 'developer', content: 'Be brief.' },
    ],
  ];
  for (const messages of histories) {
    for (const format of ['openai-chat', 'openai-responses'] as const) {
      for (const [url, extra] of [
        ['/v1/summarize', {}],
        ['/v1/summarize', { dry_run: true }],
        ['/v1/summarize', { mode: 'sections' }],
        ['/v1/fit', { target_tokens: 0 }],
        ['/v1/fit', { target_tokens: 0, dry_run: true }],
      ] as const) {
        const name = `${format} ${messages.length} system message(s) ${url} ${JSON.stringify(extra)}`;
        const res = await post(app, url, { messages, format, ...extra });
        t.equal(res.statusCode, 200, name, { body: res.body.slice(0, 300) });
        const body = res.json();
        t.equal(body.applied, false, name);
        t.same(body.messages, messages, `${name}: unchanged`);
        t.ok(typeof body.reason === 'string', `${name}: says why (${body.reason})`);
      }
    }
  }
});

t.test('a summary request as the last message: summarize, fit and expand in every format', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  for (const format of Object.keys(user) as Fmt[]) {
    const u = user[format];
    const a = assistant[format];
    const histories = {
      'alone after the head': [...head[format], u(SUMMARY_REQUEST)],
      'after a turn': [...head[format], u('Build it.'), a('Built.'), u(SUMMARY_REQUEST)],
      'after two turns': [...head[format], u('Build it.'), a('Built.'), u('Test it.'), a('Tested.'), u(SUMMARY_REQUEST)],
    };
    for (const [hn, messages] of Object.entries(histories)) {
      for (const [url, extra] of [
        ['/v1/summarize', { keep: { messages: 0 } }],
        ['/v1/summarize', { keep: { runs: 0 } }],
        ['/v1/summarize', { keep: { messages: 0 }, summary_role: 'pair' }],
        ['/v1/summarize', { keep: { messages: 0 }, dry_run: true }],
        ['/v1/summarize', { mode: 'sections' }],
        ['/v1/fit', { target_tokens: 0 }],
        ['/v1/expand', {}],
      ] as const) {
        const name = `${format}, ${hn}: ${url} ${JSON.stringify(extra)}`;
        const res = await post(app, url, { messages, format, ...extra });
        t.equal(res.statusCode, 200, name, { body: res.body.slice(0, 300) });
        const body = res.json();
        t.same(violationsOf(format, body.messages), [], `${name}: a valid history`);
        t.same(body.messages.at(-1), messages.at(-1), `${name}: the newest message kept`);
      }
    }
  }
});

const BIG = `${'line of output\n'.repeat(120)}`;
const call = (id: string, name: string, args: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
});
const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: BIG });
const chat = (args: string, name = 'read_file') => [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Read the file.' },
  call('c1', name, args),
  result('c1'),
  { role: 'assistant', content: 'Read it.' },
  { role: 'user', content: 'Now the next one.' },
];

t.test('a placeholder template naming a built-in property reads own arguments only', async (t) => {
  const app = await build(t);
  for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf']) {
    const res = await post(app, '/v1/compact', {
      messages: chat('{"path":"src/app.ts"}'),
      keep_tool_uses: 0,
      store: 'none',
      rules: [{ tool: 'read_file', placeholder: `Read {args.${name}|"nothing"} ({args.${name}}).` }],
    });
    t.equal(res.statusCode, 200, name, { body: res.body.slice(0, 300) });
    t.match(res.json().messages[3]?.content, /Read nothing \(unknown\)\./, `${name}: not an argument, so the fallback`);
  }
  // An argument that is really there under such a name is read like any other.
  const own = await post(app, '/v1/compact', {
    messages: chat('{"constructor":"Widget","__proto__":"p"}'),
    keep_tool_uses: 0,
    store: 'none',
    rules: [{ tool: 'read_file', placeholder: 'Built {args.constructor} with {args.__proto__}.' }],
  });
  t.match(own.json().messages[3].content, /Built Widget with p\./, 'own arguments are read, whatever their names');
});

t.test('a role or item type named like a built-in property is what it is: unknown', async (t) => {
  const app = await build(t);
  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    for (const format of ['openai-chat', 'openai-responses'] as const) {
      const res = await post(app, '/v1/validate', { messages: [{ role: name, content: 'x' }], format });
      t.equal(res.statusCode, 400, `${format} role ${name}`, { body: res.body.slice(0, 300) });
      t.equal(res.json().code, 'CMP_ERR_HISTORY_MALFORMED');
      t.equal(res.json().errors?.[0]?.path, 'messages[0].role', `${format} role ${name}: the role is named`);
    }
    // Detected, it is answered as any unknown role is.
    const detected = await post(app, '/v1/validate', { messages: [{ role: name, content: 'x' }] });
    const robot = await post(app, '/v1/validate', { messages: [{ role: 'robot', content: 'x' }] });
    t.equal(detected.statusCode, robot.statusCode, `detected role ${name}`);
    t.equal(detected.json().code, robot.json().code, `detected role ${name}`);
    t.same(detected.json().errors?.[0]?.path, robot.json().errors?.[0]?.path, `detected role ${name}`);
    const item = await post(app, '/v1/tokens', {
      messages: [
        { role: 'user', content: 'x' },
        { type: name, call_id: 'c' },
      ],
      format: 'openai-responses',
    });
    t.equal(item.statusCode, 200, `item type ${name}`, { body: item.body.slice(0, 300) });
    const validated = await post(app, '/v1/validate', {
      messages: [
        { role: 'user', content: 'x' },
        { type: name, call_id: 'c' },
      ],
      format: 'openai-responses',
    });
    t.match(
      validated.json().warnings,
      [{ code: 'unknown_item_type' }],
      `item type ${name}: an unknown item, kept verbatim and reported`,
    );
  }
});

/** `{"a":{"a":…1…}}` nested n levels deep. */
const deepObject = (n: number): string => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const deepArray = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;

t.test('tool arguments nested deep inside their JSON string are opaque text, never a 500', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  for (const n of [200, 5_000, 100_000]) {
    const variants = {
      'a deep path': `{"path":${deepObject(n)}}`,
      'a deep array': `{"path":${deepArray(n)}}`,
      'a deep content': `{"content":${deepObject(n)}}`,
      'deep at the top': deepObject(n),
    };
    for (const [vn, args] of Object.entries(variants)) {
      const messages = chat(args);
      const requests: [string, Record<string, unknown>][] = [
        ['/v1/compact', { keep_tool_uses: 0 }],
        ['/v1/compact', { keep_tool_uses: 0, clear_tool_inputs: true, min_tokens: 1 }],
        ['/v1/compact', { keep_tool_uses: 0, rules: [{ tool: 'read_file', placeholder: 'Read {args.path}.' }] }],
        ['/v1/summarize', { keep: { messages: 1 } }],
        ['/v1/summarize', { keep: { messages: 1 }, mode: 'sections' }],
        ['/v1/fit', { target_tokens: 0 }],
        ['/v1/tokens', {}],
        ['/v1/validate', {}],
        ['/v1/expand', {}],
      ];
      for (const [url, extra] of requests) {
        const name = `depth ${n}, ${vn}: ${url} ${JSON.stringify(extra)}`;
        const res = await post(app, url, { messages, ...extra });
        t.equal(res.statusCode, 200, name, { body: res.body.slice(0, 300) });
      }
      // The arguments are opaque: no placeholder reads them, and the call is never rewritten.
      const compacted = (await post(app, '/v1/compact', { messages, keep_tool_uses: 0, clear_tool_inputs: true })).json();
      t.same(compacted.messages[2], messages[2], `depth ${n}, ${vn}: the call is kept as it came`);
      t.match(compacted.messages[3].content, /Content read from a file\./, `depth ${n}, ${vn}: the fallback placeholder`);
    }
  }
  // The same in OpenAI Responses, whose `arguments` is the same kind of string.
  const responses = [
    { role: 'user', content: 'Read the file.' },
    { type: 'function_call', call_id: 'c1', name: 'read_file', arguments: `{"path":${deepObject(5_000)}}` },
    { type: 'function_call_output', call_id: 'c1', output: BIG },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Read it.' }] },
    { role: 'user', content: 'Next.' },
  ];
  for (const [url, extra] of [
    ['/v1/compact', { keep_tool_uses: 0, clear_tool_inputs: true }],
    ['/v1/summarize', { keep: { messages: 1 } }],
    ['/v1/fit', { target_tokens: 0 }],
  ] as const) {
    const res = await post(app, url, { messages: responses, format: 'openai-responses', ...extra });
    t.equal(res.statusCode, 200, `openai-responses: ${url}`, { body: res.body.slice(0, 300) });
  }
});

t.test('arguments nested within the depth limit are still read', async (t) => {
  const app = await build(t);
  const args = JSON.stringify({ path: 'src/app.ts', options: JSON.parse(deepObject(100)) });
  const res = await post(app, '/v1/compact', { messages: chat(args), keep_tool_uses: 0, store: 'none' });
  t.match(res.json().messages[3].content, /Content read from src\/app\.ts\./);
});

t.test('a deeply nested inline artifact content in /v1/expand is a 400 naming it', async (t) => {
  const app = await build(t);
  for (const n of [5_000, 100_000]) {
    const payload = `{"messages":[{"role":"user","content":"x"}],"artifacts":[{"id":"art_000000000000000000000000","content":${deepObject(n)}}]}`;
    const res = await app.inject({
      method: 'POST',
      url: '/v1/expand',
      payload,
      headers: { 'content-type': 'application/json' },
    });
    t.equal(res.statusCode, 400, `depth ${n}`, { body: res.body.slice(0, 300) });
    t.equal(res.json().code, 'CMP_ERR_REQUEST_TOO_DEEP');
    t.equal(res.json().errors?.[0]?.path, 'artifacts[0].content');
  }
});

t.test('a summary written without the first user message is folded later, never kept as the task', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const step = (i: number) => [
    call(`c${i}`, 'bash', `{"command":"make step${i}"}`),
    { role: 'tool', tool_call_id: `c${i}`, content: `step ${i}: ${'log line\n'.repeat(30)}` },
  ];
  for (const summary_role of ['user', 'pair'] as const) {
    const first = await post(app, '/v1/summarize', {
      messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'Build.' }, ...[0, 1, 2, 3, 4].flatMap(step)],
      keep: { messages: 2 },
      keep_first_user: false,
      summary_role,
    });
    t.equal(first.json().applied, true, summary_role);
    const again = await post(app, '/v1/summarize', {
      messages: [...first.json().messages, ...[5, 6, 7, 8].flatMap(step)],
      keep: { messages: 2 },
      summary_role,
    });
    const body = again.json();
    t.equal(body.applied, true, summary_role);
    t.equal(body.summary.parent_id, first.json().summary.id, `${summary_role}: the earlier summary is folded`);
    const ours = body.messages.filter(
      (m: { content: unknown }) => typeof m.content === 'string' && m.content.startsWith('[compactor:'),
    );
    t.equal(ours.length, summary_role === 'pair' ? 2 : 1, `${summary_role}: one summary (and its request), not two`);
  }
});
