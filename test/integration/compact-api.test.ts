import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ArtifactStore } from '../../src/store/types.js';
import { StoreFailedError, StoreUnavailableError } from '../../src/store/types.js';
import { build, testConfig } from '../support/app.js';
import { callMessage, toolResult } from '../support/messages.js';

const big = (label: string) =>
  `${label}\n${Array.from({ length: 80 }, (_, i) => `line ${i}: ${label} output value ${i * 13}`).join('\n')}`;
const call = callMessage;
const result = toolResult;

const history = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the bug.' },
  call('c1', 'Read', { file_path: 'src/app.ts' }),
  result('c1', big('app source')),
  call('c2', 'bash', { command: 'pytest -x' }),
  result('c2', big('test run')),
  call('c3', 'bash', { command: 'pytest -x' }),
  result('c3', big('test run')),
  call('c4', 'Grep', { pattern: 'handler' }),
  result('c4', big('grep hits')),
  call('c5', 'write_file', { path: 'a.txt', content: big('file body') }),
  result('c5', 'ok'),
  call('c6', 'Read', { file_path: 'README.md' }),
  result('c6', big('readme')),
  { role: 'assistant', content: 'Done.' },
];

t.test('compact, recall an artifact, expand byte-exact', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const res = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { messages: history, keep_tool_uses: 1, model: 'gpt-4o' },
  });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.applied, true);
  t.ok(body.tokens.saved > 0 && body.tokens.after === body.tokens.before - body.tokens.saved);
  t.match(
    body.messages[3].content,
    /^\[compactor:art_[0-9a-f]{24} mac=[0-9a-f]{16}\] Content read from src\/app\.ts\. Re-read it if needed\./,
  );
  t.match(body.messages[5].content, /Identical to the output of the later call c3/, 'the older duplicate points to the newer');
  t.match(body.messages[7].content, /Output of the command `pytest -x` cleared/);
  t.match(body.messages[9].content, /Search results for handler processed/);
  t.equal(body.messages[13].content, history[13]?.content, 'the newest result is kept (keep_tool_uses 1)');
  t.same(body.messages[10], history[10], 'inputs are kept unless clear_tool_inputs');
  t.same(
    body.actions.map((a: { action: string }) => a.action),
    [
      'keep',
      'keep',
      'keep',
      'offload',
      'keep',
      'offload',
      'keep',
      'offload',
      'keep',
      'offload',
      'keep',
      'keep',
      'keep',
      'keep',
      'keep',
    ],
  );
  t.equal(body.artifacts.length, 4);
  t.notOk('content' in body.artifacts[0], 'no content inline with store server');

  const art = await app.inject({ method: 'GET', url: `/v1/artifacts/${body.artifacts[0].id}` });
  t.equal(art.statusCode, 200);
  t.same(art.json().content, history[3], 'the artifact is the original message');
  t.equal(art.json().tool_name, 'Read');
  t.ok(Date.parse(art.json().expires_at) > Date.now() + 6 * 24 * 3600 * 1000, 'lives for the configured TTL');

  const ex = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: body.messages } });
  t.equal(ex.statusCode, 200);
  t.same(ex.json(), { messages: history, format: 'openai-chat', restored: 4, missing: [], warnings: [] });

  const again = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: body.messages, keep_tool_uses: 1 } });
  t.same(again.json().messages, body.messages, 'idempotent');
  t.equal(again.json().reason, 'nothing_to_reduce');
});

t.test('options: inputs, truncation, rules, exclusion, target, clear_at_least, dry run, none', async (t) => {
  const secret = 'a-secret-shared-by-two-services-0123456789';
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_ARTIFACT_SECRET: secret });
  const post = async (payload: Record<string, unknown>) =>
    (
      await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, model: 'gpt-4o', ...payload } })
    ).json();

  const inputs = await post({ clear_tool_inputs: true, keep_tool_uses: 1 });
  const args = JSON.parse(inputs.messages[10].tool_calls[0].function.arguments);
  t.match(args.content, /^\[compactor:art_[0-9a-f]{24} mac=[0-9a-f]{16}\] \[Content saved to file\]/);
  t.equal(args.path, 'a.txt', 'other arguments kept');

  const truncated = await post({ keep_tool_uses: 1, truncate_tokens: 60, exclude_tools: ['Read', 'bash', 'Grep'] });
  t.equal(truncated.messages[3].content, history[3]?.content, 'excluded tools are never compacted');

  const truncatedRead = await post({ keep_tool_uses: 1, truncate_tokens: 60, rules: [{ tool: 'Read', keep_last: 2 }] });
  t.match(truncatedRead.messages[3].content, /^app source\nline 0/, 'a result kept by keep_last is truncated: head kept');
  t.match(truncatedRead.messages[3].content, /\[compactor:art_[0-9a-f]{24} mac=[0-9a-f]{16}\] … \d+ of \d+ tokens omitted/);
  t.match(truncatedRead.messages[3].content, /line 79: app source output value 1027$/, 'tail kept');

  const ruled = await post({
    keep_tool_uses: 1,
    rules: [{ tool: 'bash', placeholder: 'Ran {args.command} ({tokens} tokens, {id}); missing: {args.nope|"none"}' }],
  });
  t.match(ruled.messages[7].content, /Ran pytest -x \(\d+ tokens, art_[0-9a-f]{24}\); missing: none/);

  const full = await post({ keep_tool_uses: 1 });
  const target = await post({ keep_tool_uses: 1, target_tokens: full.tokens.before - 10 });
  t.ok(
    target.tokens.after <= full.tokens.before - 10 && target.artifacts.length < full.artifacts.length,
    'stops once under target',
  );

  const skipped = await post({ keep_tool_uses: 1, clear_at_least: 1_000_000 });
  t.equal(skipped.applied, false);
  t.equal(skipped.reason, 'below_clear_at_least');
  t.same(skipped.messages, history);

  const dry = await post({ keep_tool_uses: 1, dry_run: true });
  t.equal(dry.applied, false);
  t.equal(dry.reason, 'dry_run');
  t.same(dry.messages, history);
  t.equal(dry.artifacts.length, 4, 'reports the artifacts it would make');
  const clean = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const dryClean = (
    await clean.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1, dry_run: true } })
  ).json();
  const notStored = await clean.inject({ method: 'GET', url: `/v1/artifacts/${dryClean.artifacts[0].id}` });
  t.equal(notStored.statusCode, 404, 'a dry run stores nothing');

  const lossy = await post({ keep_tool_uses: 1, store: 'none' });
  t.match(lossy.messages[3].content, /^\[compactor:cleared mac=[0-9a-f]{16}\] /);
  t.same(lossy.artifacts, []);
  t.equal(lossy.actions[3].action, 'clear');

  const inline = await post({ keep_tool_uses: 1, store: 'inline' });
  t.same(inline.artifacts[0].content, history[3], 'inline artifacts carry the original');
  // Inline artifacts need no store, only the same secret: ids are keyed by it.
  const fresh = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_ARTIFACT_SECRET: secret });
  const ex = await fresh.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: {
      messages: inline.messages,
      artifacts: inline.artifacts.map((a: { id: string; content: unknown }) => ({ id: a.id, content: a.content })),
    },
  });
  t.same(ex.json().messages, history, 'inline artifacts expand on any replica with the same secret');
  const stranger = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const foreign = await stranger.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: { messages: inline.messages, artifacts: [{ id: inline.artifacts[0].id, content: inline.artifacts[0].content }] },
  });
  t.equal(foreign.statusCode, 400, 'a service with another secret cannot check them: a clear 400, not a wrong restore');
  t.equal(foreign.json().code, 'CMP_ERR_ARTIFACT_MISMATCH');
  const tampered = await fresh.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: {
      messages: inline.messages,
      artifacts: [{ id: inline.artifacts[0].id, content: { role: 'tool', tool_call_id: 'c1', content: 'forged' } }],
    },
  });
  t.equal(tampered.statusCode, 400);
  t.equal(tampered.json().code, 'CMP_ERR_ARTIFACT_MISMATCH');
});

t.test('anthropic: blocks compacted in place, thinking cleared whole', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const messages = [
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'plan the reads', signature: 'sig-1' },
        { type: 'tool_use', id: 't1', name: 'Read', input: { file_path: 'a.py' } },
        { type: 'tool_use', id: 't2', name: 'Read', input: { file_path: 'b.py' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: big('a.py'), is_error: false },
        { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: big('b.py') }] },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'now answer', signature: 'sig-2' },
        { type: 'text', text: 'done' },
      ],
    },
    // The user speaks again: the tool loop above is a finished turn, its thinking no longer needed.
    { role: 'user', content: 'Thanks. Now the tests.' },
  ];
  const res = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { messages, keep_tool_uses: 0, clear_thinking: { keep_turns: 0 }, model: 'claude-sonnet-4-5' },
  });
  const body = res.json();
  t.equal(res.statusCode, 200, res.body);
  t.equal(body.format, 'anthropic');
  t.same(body.messages[2].content[0].is_error, false, 'result fields kept');
  t.match(body.messages[2].content[0].content, /Content read from a\.py/);
  t.match(body.messages[2].content[1].content, /Content read from b\.py/);
  t.same(
    body.messages[1].content.map((b: { type: string }) => b.type),
    ['tool_use', 'tool_use'],
    'old thinking removed whole',
  );
  t.same(
    body.messages[3].content.map((b: { type: string }) => b.type),
    ['text'],
    'the whole finished turn loses its thinking',
  );
  t.same(body.messages[4], messages[4], 'the newest group is untouched');
  const ex = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: body.messages } });
  t.same(ex.json().messages[2], messages[2], 'results restored');
  t.equal(ex.json().restored, 2);

  // Without the user's new message the loop is the turn in progress: its thinking stays whole.
  const loop = messages.slice(0, 4);
  const inProgress = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { messages: loop, keep_tool_uses: 0, clear_thinking: { keep_turns: 0 }, model: 'claude-sonnet-4-5' },
  });
  t.same(inProgress.json().messages[1], loop[1], 'the first message of the loop keeps its thinking block');
  t.match(inProgress.json().warnings, [{ code: 'thinking_kept' }]);
});

t.test('unknown or expired artifacts', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const missing = await app.inject({ method: 'GET', url: '/v1/artifacts/art_0123456789abcdef01234567' });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'CMP_ERR_ARTIFACT_NOT_FOUND');
  t.match(missing.headers['content-type'], /application\/problem\+json/);
  const junk = await app.inject({ method: 'GET', url: '/v1/artifacts/not-an-id' });
  t.equal(junk.statusCode, 404);
  // A placeholder of ours whose original is not in the store (store inline: nothing was stored).
  const inline = (
    await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1, store: 'inline' } })
  ).json();
  const placeholder: string = inline.messages[5].content;
  const id: string = inline.artifacts[1].id;
  t.match(placeholder, id);
  const partial = await app.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: { messages: [...history.slice(0, 5), result('c2', placeholder), ...history.slice(6)] },
  });
  t.equal(partial.statusCode, 200);
  t.same(partial.json().missing, [id], 'reported, not fatal');
  t.equal(partial.json().messages[5].content, placeholder, 'the placeholder stays');
  const forged = '[compactor:art_0123456789abcdef01234567] Output of bash cleared.';
  const made = await app.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: { messages: [...history.slice(0, 5), result('c2', forged), ...history.slice(6)] },
  });
  t.same(made.json().missing, [], 'a made-up placeholder is not ours: nothing is looked up');
  t.equal(made.json().messages[5].content, forged, 'and it stays as it is');
  const quoted = await app.inject({
    method: 'POST',
    url: '/v1/expand',
    payload: { messages: [{ role: 'user', content: `what does ${placeholder} mean?` }] },
  });
  t.same(
    quoted.json().messages,
    [{ role: 'user', content: `what does ${placeholder} mean?` }],
    'a user quoting a marker is left alone',
  );
});

t.test('a store that cannot be reached is a 503, and window still works', async (t) => {
  // A store that answered at boot (the installation secret) and went down afterwards.
  const broken: ArtifactStore = {
    kind: 'memory',
    secret: async (candidate) => candidate,
    put: async () => {
      throw new StoreUnavailableError('down');
    },
    get: async () => {
      throw new StoreUnavailableError('down');
    },
    recent: async () => {
      throw new StoreUnavailableError('down');
    },
    claim: async () => {
      throw new StoreUnavailableError('down');
    },
    ping: async () => false,
    probe: async () => {},
    usage: () => null,
    close: async () => {},
  };
  const app = await buildApp(testConfig(), { logger: pino({ level: 'silent' }), store: broken });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } });
  t.equal(res.statusCode, 503);
  t.equal(res.json().code, 'CMP_ERR_STORE_UNAVAILABLE');
  t.equal(res.headers['retry-after'], '2', 'with retry-after');
  const inline = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: { messages: history, keep_tool_uses: 1, store: 'inline' },
  });
  t.equal(inline.statusCode, 200, 'inline needs no store');
  const window = await app.inject({ method: 'POST', url: '/v1/window', payload: { messages: history } });
  t.equal(window.statusCode, 200);
  const memory = new MemoryStore();
  t.ok(await memory.ping());
});

t.test('a store that fails for good is a 500 naming the problem, without retry-after; readiness says so', async (t) => {
  let probeFails = false;
  const readOnly: ArtifactStore = {
    kind: 'sqlite',
    secret: async (candidate) => candidate,
    put: async () => {
      throw new StoreFailedError('sqlite write failed: SQLITE_READONLY', 'is read-only (its file or folder cannot be written)');
    },
    get: async () => new Map(),
    recent: async () => [],
    claim: async () => true,
    ping: async () => true,
    probe: async () => {
      if (probeFails)
        throw new StoreFailedError('sqlite probe failed: SQLITE_READONLY', 'is read-only (its file or folder cannot be written)');
    },
    usage: () => null,
    close: async () => {},
  };
  const app = await buildApp(testConfig(), { logger: pino({ level: 'silent' }), store: readOnly });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } });
  t.equal(res.statusCode, 500);
  t.equal(res.json().code, 'CMP_ERR_STORE_FAILED');
  t.equal(
    res.json().detail,
    'the sqlite artifact store is read-only (its file or folder cannot be written); an operator must fix it',
  );
  t.notMatch(res.json().detail, /retry/i);
  t.equal(res.headers['retry-after'], undefined);
  probeFails = true;
  const ready = await app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(ready.statusCode, 503);
  t.same(ready.json(), {
    status: 'store_failed',
    reason: 'the sqlite store is read-only (its file or folder cannot be written)',
  });
  t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'alive all the same');
});
