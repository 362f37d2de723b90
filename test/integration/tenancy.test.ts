import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../support/app.js';

/** A coding-agent history whose old tool result compaction offloads. */
const history = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the failing test.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/secret.py"}' } }],
  },
  {
    role: 'tool',
    tool_call_id: 'c1',
    content: `API_TOKEN = "tenant-a-private"\n${'def handler(x):\n    return x\n'.repeat(60)}`,
  },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c2', type: 'function', function: { name: 'bash', arguments: '{"command":"pytest"}' } }],
  },
  { role: 'tool', tool_call_id: 'c2', content: '1 failed' },
];

const A = { authorization: 'Bearer key-a-0123456789ab' };
const B = { authorization: 'Bearer key-b-0123456789ab' };

t.test('artifacts belong to the key that made them: another key gets 404 and restores nothing', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-a-0123456789ab,key-b-0123456789ab', COMPACTOR_STORE_URL: 'memory:' });
  const post = (url: string, payload: object, headers: Record<string, string>) =>
    app.inject({ method: 'POST', url, payload, headers });
  const compacted = (await post('/v1/compact', { messages: history, keep_tool_uses: 1 }, A)).json();
  const id: string = compacted.artifacts[0].id;
  t.match(id, /^art_[0-9a-f]{24}$/);

  const mine = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}`, headers: A });
  t.equal(mine.statusCode, 200, 'the key that offloaded it reads it');
  t.same(mine.json().content, history[3]);
  const theirs = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}`, headers: B });
  t.equal(theirs.statusCode, 404, 'another key does not');
  t.equal(theirs.json().code, 'CMP_ERR_ARTIFACT_NOT_FOUND');
  t.notMatch(theirs.body, /tenant-a-private/);

  const expanded = (await post('/v1/expand', { messages: compacted.messages }, B)).json();
  // Its placeholders are signed for key A: under key B they are text, and nothing is looked up.
  t.same(expanded.missing, [], "another key's placeholder is not one of B's");
  t.equal(expanded.restored, 0);
  t.same(expanded.messages, compacted.messages, 'and it stays as it is');
  t.notMatch(JSON.stringify(expanded), /tenant-a-private/);
  t.same((await post('/v1/expand', { messages: compacted.messages }, A)).json().messages, history, 'its own expand restores it');

  // The same content from another key is another artifact: ids tell nothing across keys.
  const other = (await post('/v1/compact', { messages: history, keep_tool_uses: 1 }, B)).json();
  t.not(other.artifacts[0].id, id, 'the same original gets another id under another key');
  t.equal(other.artifacts[0].sha256, compacted.artifacts[0].sha256, 'though the content hash reported is the same');
});

t.test('ids cannot be derived from content alone', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const res = (
    await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } })
  ).json();
  const json = JSON.stringify(history[3]);
  const sha = createHash('sha256').update(json).digest('hex');
  t.equal(res.artifacts[0].sha256, sha);
  t.not(res.artifacts[0].id, `art_${sha.slice(0, 24)}`, 'not the content hash');
  const guess = await app.inject({ method: 'GET', url: `/v1/artifacts/art_${sha.slice(0, 24)}` });
  t.equal(guess.statusCode, 404, 'a guess from the content finds nothing');
});

t.test('the summary cache is per key: a repeat is cached for its key, never a hit for another', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-a-0123456789ab,key-b-0123456789ab', COMPACTOR_STORE_URL: 'memory:' });
  const long = [
    ...history.slice(0, 2),
    ...Array.from({ length: 12 }, (_, i) => [
      {
        role: 'assistant',
        content: `step ${i}: looked at module_${i}.py. ${'The handler returns the wrong value. '.repeat(40)}`,
      },
      { role: 'user', content: `continue with step ${i + 1}` },
    ]).flat(),
  ];
  const payload = { messages: long, keep: { messages: 4 } };
  const summarize = async (headers: Record<string, string>) =>
    (await app.inject({ method: 'POST', url: '/v1/summarize', payload, headers })).json();
  const first = await summarize(A);
  t.equal(first.applied, true);
  t.equal(first.summary.cached, false);
  t.equal((await summarize(A)).summary.cached, true, 'the same key asking again is served from the cache');
  const b = await summarize(B);
  t.equal(b.summary.cached, false, 'another key asking the same is no cache hit');
  t.not(b.summary.id, first.summary.id, 'and its range is its own artifact');
});

t.test('with no keys, one shared scope: ids are stable across restarts (the secret is kept in the store)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-tenancy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = `sqlite:${join(dir, 'store.db')}`;
  const compactWith = async () => {
    const app = await build(t, { COMPACTOR_STORE_URL: url });
    const res = (
      await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } })
    ).json();
    return { app, id: res.artifacts[0].id as string };
  };
  const first = await compactWith();
  const second = await compactWith();
  t.equal(second.id, first.id, 'a second service on the same store names the same original the same way');
  const read = await second.app.inject({ method: 'GET', url: `/v1/artifacts/${first.id}` });
  t.equal(read.statusCode, 200, 'and reads what the first stored');
});

t.test('the rate limit counts validated keys, not header spellings', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-k-0123456789ab', COMPACTOR_RATE_LIMIT: '3' });
  const codes: number[] = [];
  for (const authorization of ['Bearer ', 'bearer ', 'Bearer  ', 'BEARER ', 'Bearer '].map(
    (scheme, i) => `${scheme}key-k-0123456789ab${i === 4 ? ' ' : ''}`,
  )) {
    codes.push(
      (await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: history }, headers: { authorization } }))
        .statusCode,
    );
  }
  t.same(codes, [200, 200, 200, 429, 429], 'one budget for one key, however the header is spelled');
});

t.test('with no keys, the rate limit counts client addresses: a made-up header buys no budget', async (t) => {
  const app = await build(t, { COMPACTOR_RATE_LIMIT: '2' });
  const codes: number[] = [];
  for (let i = 0; i < 4; i++) {
    const headers = { authorization: `Bearer random-${i}` };
    codes.push((await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: history }, headers })).statusCode);
  }
  t.same(codes, [200, 200, 429, 429]);
});
