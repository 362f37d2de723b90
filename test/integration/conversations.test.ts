import t from 'tap';
import { build } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';

const corpus = loadCorpus();
const django = corpus.find((x) => x.file.includes('django__django-11138'));

const A = { authorization: 'Bearer key-a-0123456789ab' };
const B = { authorization: 'Bearer key-b-0123456789ab' };
const KEYS = { COMPACTOR_API_KEYS: 'key-a-0123456789ab,key-b-0123456789ab', COMPACTOR_STORE_URL: 'memory:' };

t.test('fit calls naming a conversation are recorded, priced and totalled, for their own key only', async (t) => {
  if (!django) throw new Error('corpus missing');
  const app = await build(t, KEYS);
  const fit = async (payload: Record<string, unknown>, headers = A) =>
    app.inject({
      method: 'POST',
      url: '/v1/fit',
      headers,
      payload: { messages: django.messages, model: django.model, policy: 'tokens', ...payload },
    });
  const below = (await fit({ target_tokens: 1_000_000, conversation_id: 'run-1' })).json();
  t.equal(below.applied, false);
  const reduced = (await fit({ target_tokens: 20_000, conversation_id: 'run-1' })).json();
  t.equal(reduced.applied, true);
  t.ok(reduced.summary, 'a summary was written');
  await fit({ target_tokens: 20_000, conversation_id: 'run-1', dry_run: true });
  await fit({ target_tokens: 70_000, conversation_id: 'other' });
  await fit({ target_tokens: 70_000 });

  const list = await app.inject({ method: 'GET', url: '/v1/conversations', headers: A });
  t.equal(list.statusCode, 200);
  const ids = list.json().conversations.map((c: { id: string }) => c.id);
  t.same(ids, ['other', 'run-1'], 'newest first; the unnamed call and the dry run are not recorded');

  const one = await app.inject({ method: 'GET', url: '/v1/conversations/run-1', headers: A });
  t.equal(one.statusCode, 200);
  const d = one.json();
  t.equal(d.calls.length, 2);
  const [first, second] = d.calls;
  t.match(first, { via: 'fit', outcome: 'unchanged', reason: below.reason, prefix: { kept: true, broken_at: null } });
  t.equal(first.tokens.client, below.tokens.before);
  t.equal(first.tokens.saved, 0);
  t.match(second, { outcome: 'reduced', reason: null, prefix: { kept: false } });
  t.equal(second.tokens.client, reduced.tokens.before);
  t.equal(second.tokens.forwarded, reduced.tokens.after);
  const firstChange = reduced.actions.find((a: { action: string }) => a.action !== 'keep').index;
  t.equal(second.prefix.broken_at, firstChange, 'the break is where the first message changed');
  t.same(
    second.artifacts.map((a: { id: string }) => a.id),
    reduced.artifacts.map((a: { id: string }) => a.id),
    'every artifact the call made is listed',
  );
  t.equal(second.summaries[0].id, reduced.summary.id);
  t.equal(second.cost.source, 'estimate');
  t.equal(second.cost.straight_usd, reduced.cost.next_call.as_is);
  t.match(d.totals, { calls: 2, tokens_saved: reduced.tokens.saved, prefix_breaks: 1, outcomes: { unchanged: 1, reduced: 1 } });
  t.notMatch(one.body, /django|def |import /i, 'no content in the record');

  const text = await app.inject({ method: 'GET', url: `/v1/artifacts/${second.summaries[0].text_id}`, headers: A });
  t.equal(text.statusCode, 200, 'the summary text is linked');
  t.equal(text.json().content, reduced.summary.text);
  const original = await app.inject({ method: 'GET', url: `/v1/artifacts/${second.artifacts[0].id}`, headers: A });
  t.equal(original.statusCode, 200, 'and each original');

  const theirs = await app.inject({ method: 'GET', url: '/v1/conversations/run-1', headers: B });
  t.equal(theirs.statusCode, 404, 'another key does not see it');
  t.equal(theirs.json().code, 'CMP_ERR_CONVERSATION_NOT_FOUND');
  t.same((await app.inject({ method: 'GET', url: '/v1/conversations', headers: B })).json().conversations, []);
  t.equal((await app.inject({ method: 'GET', url: '/v1/conversations' })).statusCode, 401, 'keys guard it as /v1');
});

t.test('paging, bad input and the service function the proxy calls', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const caller = app.compactor.caller(null);
  const entry = {
    via: 'proxy' as const,
    provider: 'anthropic',
    format: 'anthropic',
    model: 'claude-sonnet-4-5',
    outcome: 'bypass' as const,
    reason: 'unknown_model',
    tokens: { client: 1000, forwarded: 1000, window: 200_000, rewritten: 0 },
    prefix: { kept: true, broken_at: null },
    ms_before_forwarding: 1.5,
    artifacts: [],
    summaries: [],
  };
  for (let i = 0; i < 5; i++) t.ok(await app.compactor.conversations.record(caller, `c${i}`, entry));
  const call = await app.compactor.conversations.record(caller, 'c0', { ...entry, outcome: 'reduced', reason: null });
  if (!call) throw new Error('not recorded');
  const usage = { uncached: 100, cache_read: 500, cache_write: 200, output: 50 };
  t.ok(
    await app.compactor.conversations.usage(caller, 'c0', call, { ...entry, tokens: { ...entry.tokens, forwarded: 800 } }, usage),
  );

  const page1 = (await app.inject({ method: 'GET', url: '/v1/conversations?limit=2' })).json();
  t.equal(page1.conversations.length, 2);
  t.equal(page1.conversations[0].id, 'c0', 'the conversation with the newest call first');
  const page2 = (await app.inject({ method: 'GET', url: `/v1/conversations?limit=2&cursor=${page1.next_cursor}` })).json();
  const page3 = (await app.inject({ method: 'GET', url: `/v1/conversations?limit=2&cursor=${page2.next_cursor}` })).json();
  t.equal(page3.next_cursor, null);
  const all = [...page1.conversations, ...page2.conversations, ...page3.conversations].map((c) => c.id);
  t.same(new Set(all).size, 5, 'every conversation once across the pages');

  const c0 = (await app.inject({ method: 'GET', url: '/v1/conversations/c0' })).json();
  t.match(c0.totals, { calls: 2, bypasses: { unknown_model: 1 }, outcomes: { bypass: 1, reduced: 1 } });
  const priced = c0.calls[1];
  t.same(priced.cache, { read: 500, write: 200 }, 'the cache as the provider reported it');
  // claude-sonnet-4-5: 3 in, 0.3 cached, 3.75 write, 15 out per million.
  t.equal(priced.cost.source, 'usage');
  t.ok(Math.abs(priced.cost.usd - (100 * 3 + 500 * 0.3 + 200 * 3.75 + 50 * 15) / 1e6) < 1e-12, 'the bill from the price table');
  t.ok(Math.abs(priced.cost.straight_usd - priced.cost.usd - (200 * 0.3) / 1e6) < 1e-12, 'straight: the removed tokens read');
  t.equal(c0.totals.cost.avoided, priced.cost.straight_usd - priced.cost.usd);

  const bad = await app.inject({ method: 'GET', url: '/v1/conversations?limit=0' });
  t.equal(bad.statusCode, 400);
  t.match(bad.headers['content-type'], /application\/problem\+json/);
  t.match(bad.body, /limit/);
  const unknown = await app.inject({ method: 'GET', url: '/v1/conversations/nope' });
  t.equal(unknown.statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: '/v1/conversations/a%20b' })).statusCode, 404, 'nor one that cannot be');
  t.equal(await app.compactor.conversations.record(caller, 'bad id!', entry), null, 'an id that is not one is not recorded');
  const badFit = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: { messages: [{ role: 'user', content: 'hi' }], target_tokens: 10, conversation_id: 'a b' },
  });
  t.equal(badFit.statusCode, 400);
  t.equal(badFit.json().errors[0].path, 'conversation_id');
});

t.test('/ui is served by the service: no key needed for the page, a strict CSP, the Host check applies', async (t) => {
  const app = await build(t, KEYS);
  const page = await app.inject({ method: 'GET', url: '/ui' });
  t.equal(page.statusCode, 200, 'the page itself holds no data: no key');
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.headers['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'/);
  t.match(page.body, /<script type="module" src="\/ui\/app.js">/);
  t.notMatch(page.body, /https?:\/\//, 'nothing from another origin');
  for (const [url, type] of [
    ['/ui/app.js', /^text\/javascript/],
    ['/ui/timeline.js', /^text\/javascript/],
    ['/ui/style.css', /^text\/css/],
  ] as const) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    t.match(res.headers['content-type'], type);
    t.equal(res.headers['x-content-type-options'], 'nosniff');
  }
  t.equal((await app.inject({ method: 'GET', url: '/ui/' })).headers.location, '/ui');
  t.equal((await app.inject({ method: 'GET', url: '/v1/conversations' })).statusCode, 401, 'what it reads needs the key');

  // COMPACTOR_AUTH_SCOPE=all guards health, metrics and docs, never the page's static files: a
  // browser navigating to /ui cannot send a bearer key, and the page holds nothing the key guards.
  const all = await build(t, { ...KEYS, COMPACTOR_AUTH_SCOPE: 'all' });
  for (const url of ['/ui', '/ui/app.js', '/ui/timeline.js', '/ui/style.css']) {
    t.equal((await all.inject({ method: 'GET', url })).statusCode, 200, `scope all: ${url} without a key`);
  }
  t.equal((await all.inject({ method: 'GET', url: '/ui/' })).statusCode, 302, 'scope all: /ui/ redirects without a key');
  t.equal((await all.inject({ method: 'GET', url: '/v1/conversations' })).statusCode, 401, 'scope all: the API needs the key');
  t.equal((await all.inject({ method: 'GET', url: '/v1/conversations', headers: A })).statusCode, 200, 'and takes it');
  t.equal((await all.inject({ method: 'GET', url: '/docs' })).statusCode, 401, 'scope all: the docs still need it');
  t.equal((await all.inject({ method: 'GET', url: '/ui/nothing.js' })).statusCode, 401, 'an unknown path under /ui is no page');

  const open = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const foreign = await open.inject({ method: 'GET', url: '/ui', headers: { host: 'attacker.example' } });
  t.equal(foreign.statusCode, 421, 'without keys, a page loaded from another name is refused (DNS rebinding)');
  t.equal((await open.inject({ method: 'GET', url: '/ui', headers: { host: '127.0.0.1:8080' } })).statusCode, 200);
});
