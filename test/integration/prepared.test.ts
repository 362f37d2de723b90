import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithLlm } from '../support/app.js';
import { gate } from '../support/fake-openai.js';
import { conversation, fit, fitBody, SYSTEM, settled } from '../support/prepared.js';

/**
 * Prepared summaries through the real app and a fake OpenAI-compatible summarizer (real HTTP):
 * fit prepares the summary a later call will need once occupancy nears the target, off the
 * request path; the later call that needs it splices it in at once when its history still holds
 * the range byte-identical at the same place, and is billed for it there, once.
 */

for (const workers of ['0', '1']) {
  t.test(`workers=${workers}: prepared ahead, spliced later at once, billed once, expand gives the history back`, async (t) => {
    const { app, server } = await buildWithLlm(t, { COMPACTOR_WORKER_MIN_BYTES: workers === '1' ? '1' : '262144' });
    const first = [SYSTEM, ...conversation(12)];
    const a = await fit(app, fitBody(first));
    t.equal(a.status, 200);
    t.equal(a.json.applied, false, 'below the target nothing changes');
    t.equal(a.json.prepared?.state, 'started', 'but a summary is being prepared');
    const { id, covers } = a.json.prepared;
    t.ok(covers.from >= 2 && covers.to > covers.from, 'it covers a range after the head and the task');
    const view = await settled(app, id);
    t.equal(view.state, 'ready');
    t.equal(view.usage.calls, 1, 'made by one summarizer call');
    t.equal(server.requests.length, 1);

    // The agent appends; the history now needs a summary.
    const second = [...a.json.messages, ...conversation(6, 12)];
    const b = await fit(app, fitBody(second));
    t.equal(b.status, 200);
    t.equal(b.json.applied, true);
    t.equal(server.requests.length, 1, 'no summarizer call on the request path: the prepared one was spliced');
    t.same(b.json.prepared, { id, state: 'spliced', covers }, 'the response names what it spliced');
    t.equal(b.json.summary.cached, true);
    t.equal(b.json.usage.prepared?.calls, 1, 'billed here, as usage.prepared');
    t.equal(b.json.usage.calls, 1, 'and in the totals');
    t.ok(b.json.tokens.after <= 3000, 'under the target');

    const again = await fit(app, fitBody(second));
    t.equal(again.json.prepared?.state, 'spliced', 'a retry splices it again');
    t.equal(again.json.usage.calls, 0, 'but is not billed for it twice');
    t.equal(server.requests.length, 1);

    const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: b.json.messages } });
    t.same(expanded.json().messages, second, 'expand restores the spliced history byte-exact');
  });
}

for (const workers of ['0', '1']) {
  t.test(
    `workers=${workers}: a client that keeps its whole history gets the spliced summary again, and the next one prepared off the request path`,
    async (t) => {
      const { app, server } = await buildWithLlm(t, { COMPACTOR_WORKER_MIN_BYTES: workers === '1' ? '1' : '262144' });
      // Policy cost, preparing at its default: the agent sends its whole history every call, never fit's answer.
      const body = (m: unknown[]) => fitBody(m, { policy: 'cost', prepare: { enabled: true } });
      let history: unknown[] = [SYSTEM, ...conversation(12)];
      let step = 12;
      const grow = () => {
        history = [...history, ...conversation(1, step)];
        step++;
        return fit(app, body(history));
      };
      let r = await fit(app, body(history));
      while (!r.json.prepared && step < 40) r = await grow();
      const first = r.json.prepared?.id;
      t.ok(first, 'a summary is asked for once the history nears the target');
      t.equal((await settled(app, first)).state, 'ready');
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push((await grow()).json);
      // Until a later summary is ready, then one more call splices it (a generous deadline: local HTTP).
      const deadline = Date.now() + 60_000;
      while (answers.at(-1).prepared?.id === first && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        answers.push((await grow()).json);
      }
      t.ok(
        answers.every((a) => a.applied && a.prepared?.state === 'spliced'),
        `every call splices a prepared summary (${answers.map((a) => a.reason ?? 'applied').join(', ')})`,
      );
      t.ok(
        answers.every((a) => a.usage.calls === (a.usage.prepared?.calls ?? 0)),
        'no summarizer call on the request path',
      );
      const ids = answers.map((a) => a.prepared.id);
      t.equal(ids[0], first, 'the first is spliced again');
      t.not(ids.at(-1), first, 'and a later one, prepared meanwhile, replaces it');
      for (let i = 1; i < answers.length; i++) {
        if (ids[i] !== ids[i - 1]) continue;
        t.same(answers[i].messages.slice(0, 3), answers[i - 1].messages.slice(0, 3), `call ${i}: the head and the summary kept`);
      }
      t.ok(server.requests.length < answers.length, `fewer summaries (${server.requests.length}) than calls (${answers.length})`);
    },
  );
}

t.test('a splice that leaves the history above the target is folded on the request path, not windowed', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const first = [SYSTEM, ...conversation(12, 0, true)];
  const a = await fit(app, fitBody(first));
  const { id, covers } = a.json.prepared;
  t.equal((await settled(app, id)).state, 'ready');
  // The agent ran on long before it needed the summary: the prepared range is a small part of it.
  const second = [...a.json.messages, ...conversation(30, 12, true)];
  const b = await fit(app, fitBody(second));
  t.equal(b.json.applied, true);
  t.same(b.json.prepared, { id, state: 'spliced', covers }, 'the prepared summary is spliced in');
  t.notOk(b.json.dropped, 'and the window drops nothing');
  t.ok(b.json.tokens.after <= 3000, 'under the target');
  t.equal(server.requests.length, 2, 'one summarizer call on the request path: the fold of the rest');
  t.not(b.json.summary.parent_id, null, 'the summary folds the spliced one');
  t.equal(b.json.usage.prepared?.calls, 1, 'the prepared summary billed here, once');
  t.equal(b.json.usage.calls, 2, 'with the fold');
  t.same(
    b.json.stages.map((s: { strategy: string; applied: boolean }) => [s.strategy, s.applied]),
    [
      ['compact', false],
      ['summarize', true],
      ['summarize', true],
    ],
    'the splice, then the fold',
  );
  const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: b.json.messages } });
  t.same(expanded.json().messages, second, 'expand restores all of it, byte-exact');
});

for (const workers of ['0', '1']) {
  t.test(
    `workers=${workers}: a call allowed to wait for the summary being made is told when it is ready, no polling`,
    async (t) => {
      const { app, server } = await buildWithLlm(t, { COMPACTOR_WORKER_MIN_BYTES: workers === '1' ? '1' : '262144' });
      server.fallback = (req) => ({ delayMs: 1200, content: `## Goal\nSummary of ${req.messages.length} messages.` });
      const first = [SYSTEM, ...conversation(12)];
      const a = await fit(app, fitBody(first));
      const { id, covers } = a.json.prepared;
      // Reads of the summary cache for the prepared summary's id, while the call waits for it.
      let reads = 0;
      const get = app.store.get.bind(app.store);
      app.store.get = (scope, ids, ...rest) => {
        if (ids.includes(id)) reads++;
        return get(scope, ids, ...rest);
      };
      const second = [...a.json.messages, ...conversation(6, 12)];
      const b = await fit(app, fitBody(second, { prepare: { enabled: true, at: { tokens: 1500 }, wait_ms: 30_000 } }));
      t.equal(b.status, 200);
      t.same(b.json.prepared, { id, state: 'spliced', covers }, 'it waited for the one being made and spliced it in');
      t.equal(server.requests.length, 1, 'no summarizer call on the request path');
      t.ok(reads <= 2, `the summary read once it was ready, not polled for (${reads} reads)`);
    },
  );
}

t.test('one prepared summary per conversation at a time; the cost policy waits for it rather than pay twice', async (t) => {
  const { app, server } = await buildWithLlm(t);
  // The summary is held until the calls that must find it being made were answered.
  const held = gate(t);
  server.fallback = (req) => ({ until: held.until, content: `## Goal\nSummary of ${req.messages.length} messages.` });
  const cost = { policy: 'cost', cache: { enabled: false } };
  const first = [SYSTEM, ...conversation(12)];
  const a = await fit(app, fitBody(first, cost));
  t.equal(a.json.prepared?.state, 'started');
  const grown = [...a.json.messages, ...conversation(1, 12)];
  const b = await fit(app, fitBody(grown, cost));
  t.equal(b.json.prepared?.id, a.json.prepared.id, 'the next call reports the one being made, not a new one');
  const over = [...grown, ...conversation(5, 13)];
  const c = await fit(app, fitBody(over, cost));
  t.equal(c.json.applied, false, 'a summary would pay, but the same range is being prepared');
  t.equal(c.json.reason, 'summary_being_prepared');
  t.equal(server.requests.length, 1, 'no summarizer call on the request path');
  held.open();
  t.equal((await settled(app, a.json.prepared.id)).state, 'ready');
  const d = await fit(app, fitBody(over, cost));
  t.equal(d.json.applied, true);
  t.equal(d.json.prepared?.state, 'spliced', 'the call that finds it ready splices it in');
  t.equal(server.requests.length, 1, 'one summarizer call in all');
});

t.test(
  'policy cost: a summary that pays with none prepared is asked for then, and the call defers instead of waiting on it',
  async (t) => {
    const writer = (req: { messages: unknown[] }) => ({
      delayMs: 300,
      content: `## Goal\nSummary of ${req.messages.length} messages.`,
    });
    const cost = { policy: 'cost', cache: { enabled: false } };
    // Far over the target at once (no call before it saw the summary coming): one would pay now.
    const over = [SYSTEM, ...conversation(18)];
    const without = await buildWithLlm(t);
    without.server.fallback = writer;
    const off = await fit(without.app, fitBody(over, { ...cost, prepare: { enabled: false } }));
    t.equal(off.json.applied, true, 'without preparing, a summary is made on the request path');
    t.equal(without.server.requests.length, 1);
    const { app, server } = await buildWithLlm(t);
    server.fallback = writer;
    const a = await fit(app, fitBody(over, cost));
    t.equal(a.json.applied, false, 'with preparing, nothing changes on this call');
    t.equal(a.json.reason, 'summary_being_prepared');
    t.equal(a.json.prepared?.state, 'started', 'the summary is asked for off the request path');
    t.equal((await settled(app, a.json.prepared.id)).state, 'ready');
    const b = await fit(app, fitBody(over, cost));
    t.equal(b.json.prepared?.state, 'spliced', 'a later call splices it in');
    t.equal(b.json.prepared?.id, a.json.prepared.id);
    t.equal(server.requests.length, 1, 'one summarizer call for it, made off the request path');
    // The same shape as the summary made at need (ids and markers differ: each app has its own secret).
    t.equal(b.json.messages.length, off.json.messages.length, 'as many messages as the summary made at need leaves');
    t.same(b.json.messages.slice(-6), off.json.messages.slice(-6), 'the same tail kept verbatim');
  },
);

/** `turns` tool exchanges (a call and a large result) of an agent reading files. */
function toolRun(turns: number, from = 0) {
  const out: unknown[] = [];
  for (let i = from; i < from + turns; i++) {
    const id = `call_${i}`;
    out.push({
      role: 'assistant',
      content: `Reading module ${i} to see ${'how the parser handles nested values and why it fails. '.repeat(8)}`,
      tool_calls: [
        { id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/m${i}.py` }) } },
      ],
    });
    out.push({ role: 'tool', tool_call_id: id, content: `def f${i}():\n${'    return compute(value) + 1\n'.repeat(30)}` });
  }
  return out;
}

t.test('policy cost: a range prepared as the next compaction will leave it still splices after that compaction', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const cost = {
    policy: 'cost',
    cache: { enabled: false },
    compact: { keep_tool_uses: 2 },
    summarize: { keep: { messages: 4 }, summarizer: { max_tokens: 200 } },
  };
  const first = [SYSTEM, { role: 'user', content: 'Fix the failing test.' }, ...toolRun(6)];
  const a = await fit(app, fitBody(first, { ...cost, prepare: { enabled: true, at: { tokens: 100 } }, target_tokens: 100_000 }));
  t.equal(a.json.prepared?.state, 'started');
  t.equal((await settled(app, a.json.prepared.id)).state, 'ready');
  // The next calls compact (old results become placeholders) and then need the summary.
  const grown = [...a.json.messages, ...toolRun(4, 6)];
  const b = await fit(app, fitBody(grown, { ...cost, target_tokens: 1000 }));
  t.equal(b.json.applied, true);
  t.equal(b.json.prepared?.state, 'spliced', 'the range is byte-identical once compacted as it was prepared');
  t.equal(server.requests.length, 1, 'no summarizer call on the request path');
  const expanded = await app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: b.json.messages } });
  t.same(expanded.json().messages, [...first, ...toolRun(4, 6)], 'expand restores everything: the summary and every placeholder');
});

t.test('a history whose past was rewritten never splices: it is summarized as without preparing', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const first = [SYSTEM, ...conversation(12)];
  const a = await fit(app, fitBody(first));
  await settled(app, a.json.prepared.id);
  const rewritten = structuredClone(first);
  (rewritten[5] as { content: string }).content += ' (edited)';
  const b = await fit(app, fitBody([...rewritten, ...conversation(6, 12)]));
  t.equal(b.json.applied, true);
  t.not(b.json.prepared?.state, 'spliced', 'the prepared range is not in this history');
  t.equal(server.requests.length, 2, 'the summary was asked for on the request path');
  t.equal(b.json.summary.cached, false);
});

t.test('a prepared summary that fails is reported, and the call that needs one summarizes as before', async (t) => {
  const { app, server } = await buildWithLlm(t, { COMPACTOR_SUMMARIZER_MAX_RETRIES: '0' });
  server.enqueue({ fault: 'status', status: 400 });
  const first = [SYSTEM, ...conversation(12)];
  const a = await fit(app, fitBody(first));
  const view = await settled(app, a.json.prepared.id);
  t.equal(view.state, 'failed');
  t.match(view.error, /^CMP_ERR_/, 'with its error code, no content');
  const b = await fit(app, fitBody([...first, ...conversation(6, 12)]));
  t.equal(b.json.applied, true);
  t.not(b.json.prepared?.state, 'spliced');
  t.ok(b.json.summary, 'summarized on the request path');
});

t.test('tenants never see or splice each other’s prepared summaries', async (t) => {
  const keys = ['key-a-0123456789ab', 'key-b-0123456789ab'];
  const { app, server } = await buildWithLlm(t, { COMPACTOR_API_KEYS: keys.join(',') });
  const first = [SYSTEM, ...conversation(12)];
  const a = await fit(app, fitBody(first), keys[0]);
  await settled(app, a.json.prepared.id, keys[0]);
  const other = await app.inject({
    method: 'GET',
    url: `/v1/prepared/${a.json.prepared.id}`,
    headers: { authorization: `Bearer ${keys[1]}` },
  });
  t.equal(other.statusCode, 404, 'another key cannot read it');
  t.equal(other.json().code, 'CMP_ERR_PREPARED_NOT_FOUND');
  const b = await fit(app, fitBody([...first, ...conversation(6, 12)]), keys[1]);
  t.not(b.json.prepared?.state, 'spliced', "another key's history does not splice it");
  t.equal(server.requests.length, 2);
});

t.test('on by default with an LLM summarizer (COMPACTOR_PREPARE unset)', async (t) => {
  const { app } = await buildWithLlm(t, { COMPACTOR_PREPARE: '' });
  const body = fitBody([SYSTEM, ...conversation(12)]);
  const a = await fit(app, { ...body, prepare: { at: { tokens: 1500 } } });
  t.equal(a.json.prepared?.state, 'started');
  t.equal((await settled(app, a.json.prepared.id)).state, 'ready');
});

t.test('off by request, and by default without an LLM: nothing is prepared', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const a = await fit(app, fitBody([SYSTEM, ...conversation(12)], { prepare: { enabled: false } }));
  t.equal(a.json.prepared, undefined);
  t.equal(server.requests.length, 0);
});

t.test('a restarted embedded service prepares again on the next request', async (t) => {
  const first = [SYSTEM, ...conversation(12)];
  let id = '';
  {
    const { app } = await buildWithLlm(t);
    id = (await fit(app, fitBody(first))).json.prepared.id;
    await app.close();
  }
  const { app } = await buildWithLlm(t);
  const again = await fit(app, fitBody(first));
  t.equal(again.json.prepared?.state, 'started', 'its queue is in memory: the next request starts it again');
  t.equal((await settled(app, again.json.prepared.id)).state, 'ready');
  t.ok(id.length > 0);
});

for (const [store, workers] of [
  ['memory', '0'],
  ['memory', '1'],
  ['sqlite', '0'],
  ['sqlite', '1'],
] as const) {
  t.test(`${store}, workers=${workers}: concurrent fits splicing one ready summary bill it once`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-bill-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const { app, server } = await buildWithLlm(t, {
      COMPACTOR_STORE_URL: store === 'memory' ? 'memory:' : `sqlite:${join(dir, 'store.db')}`,
      COMPACTOR_WORKER_MIN_BYTES: workers === '1' ? '1' : '262144',
    });
    const a = await fit(app, fitBody([SYSTEM, ...conversation(12)]));
    const { id } = a.json.prepared;
    t.equal((await settled(app, id)).state, 'ready');
    const second = [...a.json.messages, ...conversation(6, 12)];
    // All three read the index before any reports back: each sees the summary unbilled.
    const splicers = await Promise.all([1, 2, 3].map(() => fit(app, fitBody(second))));
    t.same(
      splicers.map((s) => s.json.prepared?.state),
      ['spliced', 'spliced', 'spliced'],
      'all three splice it',
    );
    t.equal(server.requests.length, 1, 'with no summarizer call on the request path');
    const billed = splicers.filter((s) => s.json.usage.prepared?.calls === 1);
    t.equal(billed.length, 1, 'exactly one response bills it');
    t.equal(billed[0]?.json.usage.calls, 1, 'in its totals');
    t.ok(billed[0]?.json.cost.summarizer_cost > 0, 'and its cost prices it');
    for (const other of splicers.filter((s) => s !== billed[0])) {
      t.equal(other.json.usage.total_tokens, 0, 'the others bill nothing');
      t.equal(other.json.cost.summarizer_cost, 0, 'nor price it in their cost');
      // One that read the index after the bill sees no usage to bill; one that raced it says so.
      const raced = other.json.usage.prepared !== undefined;
      t.equal(other.json.usage.prepared?.total_tokens ?? 0, 0, 'usage.prepared, if reported, is 0');
      t.equal(
        other.json.warnings.some((w: { code: string }) => w.code === 'prepared_already_billed'),
        raced,
        'and says it was billed already',
      );
    }
  });
}

/** `compactor_prepared_total{event}` as `/metrics` reports it. */
async function preparedCount(app: Awaited<ReturnType<typeof buildWithLlm>>['app'], event: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`compactor_prepared_total{event="${event}"}`));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** Resolves once the fake summarizer has received `n` requests. */
async function calls(server: Awaited<ReturnType<typeof buildWithLlm>>['server'], n: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (server.requests.length < n && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
}

t.test('embedded: a full queue drops its oldest waiting job for a new one, counted, never made', async (t) => {
  const { app, server } = await buildWithLlm(t, { COMPACTOR_SUMMARIZER_CONCURRENCY: '1', COMPACTOR_PREPARE_QUEUE_MAX: '2' });
  // The first job holds the only slot until every fit was answered: the others wait behind it.
  const held = gate(t);
  server.enqueue({ until: held.until, content: '## Goal and constraints\nA slow summary.' });
  const ids: string[] = [];
  for (const from of [0, 100, 200, 300, 400]) {
    const res = await fit(app, fitBody([SYSTEM, ...conversation(12, from)]));
    t.equal(res.json.prepared?.state, 'started');
    ids.push(res.json.prepared.id);
    if (from === 0) await calls(server, 1);
  }
  held.open();
  const views = [];
  for (const id of ids) views.push(await settled(app, id));
  t.same(
    views.map((v) => v.state),
    ['ready', 'failed', 'failed', 'ready', 'ready'],
    'the two oldest waiting were dropped for the two newest',
  );
  t.equal(views[1].error, 'CMP_ERR_OVERLOADED', 'and say why');
  t.equal(server.requests.length, 3, 'no summarizer call for a dropped job');
  t.equal(await preparedCount(app, 'dropped'), 2, 'counted as dropped');
});

t.test('embedded: a waiting job whose range left the index (newest 32 per key) is dropped before it runs', async (t) => {
  // Room for every waiting job: only the index drops one here.
  const { app, server } = await buildWithLlm(t, { COMPACTOR_SUMMARIZER_CONCURRENCY: '1', COMPACTOR_PREPARE_QUEUE_MAX: '64' });
  // The first job holds the only slot until every fit was answered (a delay was not always enough).
  const held = gate(t);
  server.enqueue({ until: held.until, content: '## Goal and constraints\nA slow summary.' });
  let last = '';
  for (let i = 0; i < 34; i++) {
    const res = await fit(app, fitBody([SYSTEM, ...conversation(12, i * 100)]));
    t.equal(res.json.prepared?.state, 'started');
    last = res.json.prepared.id;
    if (i === 0) await calls(server, 1);
  }
  held.open();
  // FIFO on one slot: once the newest is made, every job before it ran or was dropped.
  t.equal((await settled(app, last)).state, 'ready');
  t.equal(server.requests.length, 33, 'the second range, out of the index while it waited, was never made');
  t.equal(await preparedCount(app, 'dropped'), 1, 'counted as dropped');
});
