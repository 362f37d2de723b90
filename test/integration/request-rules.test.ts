/**
 * Request rules that must hold the same way on every endpoint and in every mode: a summarizer
 * model that is not allowed (with or without an LLM), the length of `run_ids` and
 * `usage.messages_covered`, and unknown option names at any depth.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { STRATEGIES } from '../../src/strategies/registry.js';
import { build, buildWithLlm } from '../support/app.js';

const post = (app: FastifyInstance, url: string, payload: unknown) =>
  app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> });

const step = (i: number) => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"command":"make step${i}"}` } }],
  },
  { role: 'tool', tool_call_id: `c${i}`, content: `step ${i}: ${'log line\n'.repeat(40)}` },
];
const history = (n: number) => [
  { role: 'system', content: 'You are a build agent.' },
  { role: 'user', content: 'Build the project.' },
  ...Array.from({ length: n }, (_, i) => step(i)).flat(),
  { role: 'user', content: 'Now lint.' },
  ...step(99),
];

/** Every way a summarizer model reaches the service: both modes, dry runs, fit, short histories. */
const MODEL_CASES: [string, string, Record<string, unknown>][] = [
  ['rolling', '/v1/summarize', { keep: { messages: 4 } }],
  ['rolling, nothing to summarize', '/v1/summarize', { keep: { messages: 100 } }],
  ['rolling, below the trigger', '/v1/summarize', { keep: { messages: 4 }, trigger: { tokens: 10_000_000 } }],
  ['rolling dry run', '/v1/summarize', { keep: { messages: 4 }, dry_run: true }],
  ['rolling, on_failure window', '/v1/summarize', { keep: { messages: 4 }, on_failure: 'window' }],
  ['sections', '/v1/summarize', { mode: 'sections' }],
  ['sections dry run', '/v1/summarize', { mode: 'sections', dry_run: true }],
];

t.test('a summarizer model is a 400 when no LLM is configured, in every mode, saying why', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const cases: [string, string, Record<string, unknown>][] = [
    ...MODEL_CASES.map(([n, url, o]): [string, string, Record<string, unknown>] => [
      n,
      url,
      { ...o, summarizer: { model: 'gpt-4o' } },
    ]),
    ['fit', '/v1/fit', { target_tokens: 100, summarize: { summarizer: { model: 'gpt-4o' } } }],
    ['fit, compaction suffices', '/v1/fit', { target_tokens: 2000, summarize: { summarizer: { model: 'gpt-4o' } } }],
    ['fit dry run', '/v1/fit', { target_tokens: 100, dry_run: true, summarize: { summarizer: { model: 'gpt-4o' } } }],
  ];
  for (const [name, url, options] of cases) {
    const res = await post(app, url, { messages: history(8), ...options });
    t.equal(res.statusCode, 400, name, { body: res.body.slice(0, 300) });
    const body = res.json();
    t.equal(body.code, 'CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED', name);
    t.match(body.detail, /no LLM is configured/, `${name}: says why`);
    t.equal(
      body.errors?.[0]?.path,
      url === '/v1/fit' ? 'summarize.summarizer.model' : 'summarizer.model',
      `${name}: names the field`,
    );
  }
  const ok = await post(app, '/v1/summarize', { messages: history(8), keep: { messages: 4 } });
  t.equal(ok.json().applied, true, 'without a model, the extractive summarizer serves');
  t.equal(ok.json().summary.summarizer, 'extractive');
});

t.test('a model off the allowed list is a 400 in every mode, fit included, before any call', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const cases: [string, string, Record<string, unknown>][] = [
    ...MODEL_CASES.map(([n, url, o]): [string, string, Record<string, unknown>] => [
      n,
      url,
      { ...o, summarizer: { model: 'not-on-the-list' } },
    ]),
    ['fit', '/v1/fit', { target_tokens: 100, summarize: { summarizer: { model: 'not-on-the-list' } } }],
    ['fit, compaction suffices', '/v1/fit', { target_tokens: 2000, summarize: { summarizer: { model: 'not-on-the-list' } } }],
  ];
  for (const [name, url, options] of cases) {
    const res = await post(app, url, { messages: history(8), ...options });
    t.equal(res.statusCode, 400, name, { body: res.body.slice(0, 300) });
    t.equal(res.json().code, 'CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED', name);
    t.match(res.json().detail, /COMPACTOR_SUMMARIZER_MODELS/, `${name}: says why`);
  }
  t.equal(server.requests.length, 0, 'no call made');
});

t.test('run_ids and usage must fit the history on every endpoint that takes one, /v1/validate included', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const messages = history(2);
  const n = messages.length;
  const endpoints: [string, Record<string, unknown>][] = [
    ['/v1/tokens', {}],
    ['/v1/validate', {}],
    ['/v1/window', {}],
    ['/v1/compact', {}],
    ['/v1/summarize', {}],
    ['/v1/fit', { target_tokens: 100 }],
  ];
  const bad: [string, Record<string, unknown>, string][] = [
    ['too few run_ids', { run_ids: ['a'] }, 'run_ids'],
    ['too many run_ids', { run_ids: Array.from({ length: n + 1 }, () => 'a') }, 'run_ids'],
    ['messages_covered past the end', { usage: { total_tokens: 500, messages_covered: n + 1 } }, 'usage.messages_covered'],
    ['usage without a total', { usage: { messages_covered: 1 } }, 'usage'],
  ];
  for (const [url, extra] of endpoints) {
    for (const [name, fields, path] of bad) {
      const res = await post(app, url, { messages, ...extra, ...fields });
      t.equal(res.statusCode, 400, `${url}: ${name}`, { body: res.body.slice(0, 300) });
      t.equal(res.json().code, 'CMP_ERR_OPTIONS_INVALID', `${url}: ${name}`);
      t.equal(res.json().errors?.[0]?.path, path, `${url}: ${name} names ${path}`);
    }
    const good = await post(app, url, {
      messages,
      ...extra,
      run_ids: messages.map(() => 'r1'),
      usage: { total_tokens: 500, messages_covered: n },
    });
    t.equal(good.statusCode, 200, `${url}: parallel fields of the right length`, { body: good.body.slice(0, 300) });
  }
});

t.test('an unknown option is an error at every depth, never dropped', async (t) => {
  // Parsed alone (the library's entry point), every strategy's options reject an unknown name.
  for (const [kind, strategy] of Object.entries(STRATEGIES)) {
    const parsed = strategy.options.safeParse({ min_result_tokens: 20, ...(kind === 'fit' ? { target_tokens: 1 } : {}) });
    t.notOk(parsed.success, `${kind}: options.parse rejects min_result_tokens`);
    t.match(parsed.error?.issues[0], { code: 'unrecognized_keys', keys: ['min_result_tokens'] });
  }
  const app = await build(t);
  const messages = history(2);
  const cases: [string, Record<string, unknown>, string][] = [
    ['/v1/fit', { target_tokens: 1, compact: { min_result_tokens: 20 } }, 'compact.min_result_tokens'],
    ['/v1/fit', { target_tokens: 1, summarize: { keep_turns: 2 } }, 'summarize.keep_turns'],
    ['/v1/fit', { target_tokens: 1, summarize: { summarizer: { modle: 'x' } } }, 'summarize.summarizer.modle'],
    ['/v1/fit', { target_tokens: 1, summarize: { qa: { enabled: true, max: 3 } } }, 'summarize.qa.max'],
    ['/v1/fit', { target_tokens: 1, window: { keep: { runs: 1, turns: 2 } } }, 'window.keep.turns'],
    ['/v1/fit', { target_tokens: 1, compact: { rules: [{ tool: 'bash', keep: 1 }] } }, 'compact.rules[0].keep'],
    ['/v1/fit', { target_tokens: 1, compact: { clear_thinking: { keep_turns: 1, all: true } } }, 'compact.clear_thinking.all'],
    ['/v1/compact', { min_result_tokens: 20 }, 'min_result_tokens'],
    ['/v1/compact', { clear_thinking: { keep_turns: 1, all: true } }, 'clear_thinking.all'],
    ['/v1/summarize', { summarizer: { modle: 'x' } }, 'summarizer.modle'],
    ['/v1/window', { keep: { runs: 1, turns: 2 } }, 'keep.turns'],
    ['/v1/window', { trigger: { tokens: 1, percent: 2 } }, 'trigger.percent'],
  ];
  for (const [url, options, path] of cases) {
    const res = await post(app, url, { messages, ...options });
    t.equal(res.statusCode, 400, `${url} ${path}`, { body: res.body.slice(0, 300) });
    t.equal(res.json().code, 'CMP_ERR_REQUEST_VALIDATION', `${url} ${path}`);
    t.equal(res.json().errors?.[0]?.path, path, `${url}: names ${path}`);
  }
  // usage is the provider's object as it came: deliberately loose.
  const loose = await post(app, '/v1/tokens', { messages, usage: { total_tokens: 10, service_tier: 'default' } });
  t.equal(loose.statusCode, 200, 'usage keeps the provider fields it does not read');
});

t.test(
  "fit's tokens stay in the usage's units: a usage that counts fewer tokens than Compactor never drives tokens.after under 0",
  async (t) => {
    const app = await build(t);
    const messages = history(14);
    const counted = (await post(app, '/v1/tokens', { messages })).json().total as number;
    for (const ratio of [0.25, 0.5, 1, 2]) {
      const total = Math.round(counted * ratio);
      const res = await post(app, '/v1/fit', {
        messages,
        target_tokens: Math.round(total * 0.3),
        limit: { tokens: Math.round(total * 0.5) },
        usage: { total_tokens: total, messages_covered: messages.length - 2 },
      });
      t.equal(res.statusCode, 200, { body: res.body.slice(0, 300) });
      const { tokens, stages } = res.json() as {
        tokens: { before: number; after: number; saved: number };
        stages: { tokens_after: number }[];
      };
      t.ok(tokens.before >= total, `usage ${ratio}x the count: before ${tokens.before} holds the reported ${total}`);
      t.ok(tokens.after > 0 && tokens.after <= tokens.before, `usage ${ratio}x the count: after ${tokens.after} in (0, before]`);
      t.ok(
        stages.every((s) => s.tokens_after > 0),
        'and so is every stage',
      );
      // What was freed, in the usage's units: the count's share freed, applied to the usage's total.
      const share = tokens.saved / tokens.before;
      t.ok(share < 1, `freed ${Math.round(share * 100)}% of the occupancy, not more than it held`);
    }
  },
);
