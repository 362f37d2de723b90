import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { rollingStep } from '../../src/proxy/compaction/rolling.js';
import { SEAL_PREFIX } from '../../src/proxy/compaction/seal.js';
import { buildWithLlm } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * Instant compaction through the real app and the proxy's front door, against the fake provider
 * over real HTTP, with the captured requests of Claude Code 2.1.332 and both Codex 0.171.0 forms
 * (test/fixtures/agent-compaction): the conversation's rolling prepared summary is started by an
 * ordinary request past its share of the window and made by the fake LLM summarizer; then the
 * agent's compaction request is answered by Compactor (the provider never sees it), or, with none
 * ready, the opt-out header or the option off, reaches the provider byte-identical. A sealed
 * `compaction` item is replaced by its summary text on the next request; a forged one goes as sent.
 */

interface Captured {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * A captured request with `TURNS` earlier exchanges put before its history (the captured sessions
 * are short: a rolling summary needs a range before the turn in flight). The user asks briefly and
 * the assistant answers at length, as in an agent's session: every summary quotes the user's words
 * of its range verbatim, so a range of user text alone gives a summary no smaller than it
 * (`summary_not_smaller`), and nothing is ready.
 */
function fixture(name: string): Captured {
  const c = JSON.parse(readFileSync(new URL(`../fixtures/agent-compaction/${name}.json`, import.meta.url), 'utf8')) as Captured;
  const field = Array.isArray(c.body.messages) ? 'messages' : 'input';
  const anthropic = field === 'messages';
  const earlier = Array.from({ length: TURNS }, (_, i) =>
    anthropic
      ? [
          { role: 'user', content: `${TASK} Part ${i}.` },
          { role: 'assistant', content: `Part ${i}: ${'numbers '.repeat(40)}` },
        ]
      : [
          {
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: `${TASK} Part ${i}.` }],
          },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `Part ${i}: ${'numbers '.repeat(40)}` }] },
        ],
  ).flat();
  return { ...c, body: { ...c.body, [field]: [...earlier, ...(c.body[field] as unknown[])] } };
}

const TURNS = 6;
const TASK = 'Count the numbers, task 7f3a.';

const SMALL_WINDOW = JSON.stringify({ context_window: 2000, instant_compaction_share: 0.1 });

interface Stand {
  app: FastifyInstance;
  base: string;
  fake: FakeProvider;
}

async function stand(t: Test, overrides: Partial<Record<keyof Config, string>> = {}): Promise<Stand> {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const { app } = await buildWithLlm(t, {
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    ...overrides,
  });
  const { base } = await listen(app);
  return { app, base, fake };
}

/** Posts a captured request (its agent's headers, a credential) through the proxy, `body` as given. */
function send(s: Stand, c: Captured, body: Record<string, unknown> | string, extra: Record<string, string> = {}) {
  const anthropic = c.url.startsWith('/v1/messages');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) if (!['content-length', 'accept-encoding', 'host'].includes(k)) headers[k] = v;
  const credential: Record<string, string> = anthropic ? { 'x-api-key': 'sk-ant-one' } : { authorization: 'Bearer sk-one' };
  return fetch(`${s.base}/${anthropic ? 'anthropic' : 'openai'}${c.url}`, {
    method: 'POST',
    headers: { ...headers, ...credential, 'content-type': 'application/json', 'x-compactor-options': SMALL_WINDOW, ...extra },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The history an agent sent before its compaction request: the compaction instruction (or trigger) left out. */
function before(c: Captured): Record<string, unknown> {
  const field = Array.isArray(c.body.messages) ? 'messages' : 'input';
  const history = [...(c.body[field] as Record<string, unknown>[])];
  const last = history.pop() as Record<string, unknown>;
  if (field === 'messages' && Array.isArray(last.content) && last.content.length > 1)
    history.push({ ...last, content: last.content.slice(0, -1) });
  return { ...c.body, [field]: history };
}

/** Waits (to a generous deadline, polling) until a prepared summary of the shared scope is ready. */
async function ready(s: Stand): Promise<void> {
  const scope = s.app.compactor.caller(null).scope;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const context = await s.app.preparer.context(scope);
    if (context.entries.some((e) => e.state === 'ready')) return;
    if (context.entries.some((e) => e.state === 'failed')) throw new Error('the prepared summary failed');
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no prepared summary became ready');
}

/** An ordinary turn, then its compaction request once the prepared summary is ready. */
async function compactAfterTurn(s: Stand, c: Captured, extra: Record<string, string> = {}) {
  const turn = await send(s, c, before(c));
  await turn.text();
  await ready(s);
  const sentBefore = s.fake.modelRequests().length;
  const res = await send(s, c, c.body, extra);
  const text = await res.text();
  return { res, text, upstream: s.fake.modelRequests().length - sentBefore };
}

const metric = async (s: Stand) => s.app.metrics.registry.getSingleMetricAsString('compactor_proxy_compactions_total');

t.test('Claude Code: its compaction request is answered from the prepared summary, as an Anthropic stream', async (t) => {
  const s = await stand(t);
  const c = fixture('claude-code-auto');
  const { res, text, upstream } = await compactAfterTurn(s, c);
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-compactor'), 'compaction-answered');
  t.match(res.headers.get('x-compactor-summarizer-usage') ?? '', /^input=\d+, output=\d+$/);
  t.equal(upstream, 0, 'the provider never received the compaction request');
  t.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  t.match(text, /event: message_start[\s\S]*<summary>[\s\S]*1\. Primary Request and Intent:[\s\S]*event: message_stop/);
  t.match(text, /art_[0-9a-f]{24}/, 'the recall pointer names the artifact of the summarized range');
  t.match(text, /task 7f3a/, 'the answer holds the task text (the task kept before the summary, quoted)');
  t.match(await metric(s), /provider="anthropic",outcome="answered"\} 1/);
  // The conversation record: the answered compaction is a call of the same conversation as the turn before it.
  type Recorded = { outcome: string; summaries: { id: string; text_id: string | null; summarizer: string | null }[] };
  let recorded: Recorded[] = [];
  const outcomes = () => recorded.map((c) => c.outcome);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !outcomes().includes('compaction-answered')) {
    const list = await s.app.inject({ method: 'GET', url: '/v1/conversations' });
    const ids: string[] = list.json().conversations.map((c: { id: string }) => c.id);
    const details = await Promise.all(ids.map((id) => s.app.inject({ method: 'GET', url: `/v1/conversations/${id}` })));
    const calls = details.map((d) => d.json().calls as Recorded[]);
    recorded = calls.find((c) => c.some((x) => x.outcome === 'compaction-answered')) ?? [];
    if (!outcomes().includes('compaction-answered')) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(outcomes().at(-1), 'compaction-answered', 'the answered compaction is recorded');
  t.ok(recorded.length >= 2, `in the conversation of the turn before it (${outcomes().join(', ')})`);
  // With the summary it answered with: its range (the artifact the answer's recall pointer names) and its text.
  const answered = recorded.at(-1)?.summaries[0];
  t.ok(answered && text.includes(answered.id), 'the summarized range the answer names');
  const kept = await s.app.inject({ method: 'GET', url: `/v1/artifacts/${answered?.text_id}` });
  t.equal(kept.statusCode, 200, 'the summary text is linked');
  const summary = kept.json().content as string;
  // The answer's text, its stream's deltas joined.
  const deltas = [...text.matchAll(/"text":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string).join('');
  // The answer maps the summary's sections onto the ones Claude Code asks for: its body is there as kept.
  const body = summary.split('\n').slice(1, 8).join('\n');
  t.ok(body.length > 100 && deltas.includes(body), 'it is the text answered (its sections renamed)');
});

t.test(
  'Claude Code: with none ready, the opt-out header or the option off, the request reaches the provider byte-identical',
  async (t) => {
    const c = fixture('claude-code-auto');
    const raw = JSON.stringify(c.body);
    const none = await stand(t);
    const res = await send(none, c, raw);
    await res.text();
    t.equal(res.headers.get('x-compactor'), 'compaction-passed; reason=none-ready');
    t.equal(none.fake.modelRequests().at(-1)?.raw.toString('utf8'), raw, 'byte-identical, not reduced');

    const optOut = await stand(t);
    const out = await compactAfterTurn(optOut, { ...c, body: JSON.parse(raw) }, { 'x-compactor-instant-compaction': 'off' });
    t.equal(out.res.headers.get('x-compactor'), 'compaction-passed; reason=opted-out');
    t.equal(out.upstream, 1);
    const got = optOut.fake.modelRequests().at(-1);
    t.equal(got?.raw.toString('utf8'), raw, 'byte-identical');
    t.notOk(got?.headers['x-compactor-instant-compaction'], 'the opt-out header is not forwarded');

    const off = await stand(t, { COMPACTOR_PROXY_OPTIONS: '{"instant_compaction":false}' });
    const r = await send(off, c, raw);
    await r.text();
    t.equal(r.headers.get('x-compactor'), 'compaction-passed; reason=off');
    t.equal(off.fake.modelRequests().at(-1)?.raw.toString('utf8'), raw);
    t.match(await metric(off), /outcome="passed_off"\} 1/);
  },
);

/**
 * Claude Code's history after its own compaction, as 2.1.332 sends it: its continuation message
 * (the earlier summary, then the task), a pinned `system` message after it, the calls since, and a
 * second pinned `system` message after the first call's result (its deferred tools). A summary ends
 * at a pinned instruction, so a rolling summary of this history as sent had nothing before the
 * second one to cover (`instruction_kept`) and the second compaction passed `none-ready`.
 */
function afterOwnCompaction(c: Captured): { turn: Record<string, unknown>; compaction: Record<string, unknown> } {
  const call = (n: number): [Record<string, unknown>, { role: string; content: unknown[] }] => [
    {
      role: 'assistant',
      content: [
        { type: 'text', text: `Running step ${n}.` },
        { type: 'tool_use', id: `toolu_${n}`, name: 'Bash', input: { command: `seq 1 ${3000 + n}` } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${n}`, content: 'numbers '.repeat(300) }] },
  ];
  const [call2, result2] = call(2);
  const history = [
    { role: 'user', content: `This session is being continued from a previous conversation. Summary: ${TASK}` },
    { role: 'system', content: "Today's date is 2026-12-07." },
    call2,
    {
      ...result2,
      content: [...result2.content, { type: 'text', text: '<system-reminder>\nBe brief.\n</system-reminder>' }],
    },
    { role: 'system', content: 'The following deferred tools are now available via ToolSearch.' },
    ...call(3),
    ...call(4),
    ...call(5),
  ] as Record<string, unknown>[];
  const messages = c.body.messages as { content: unknown[] }[];
  const instruction = messages[messages.length - 1]?.content.at(-1);
  const last = history.at(-1) as Record<string, unknown>;
  const asked = [...history.slice(0, -1), { ...last, content: [...(last.content as unknown[]), instruction] }];
  return { turn: { ...c.body, messages: history }, compaction: { ...c.body, messages: asked } };
}

t.test(
  'Claude Code: its second compaction, after the pinned system messages it writes after its first, is answered',
  async (t) => {
    const s = await stand(t);
    const c = fixture('claude-code-auto');
    const { turn, compaction } = afterOwnCompaction(c);
    // A window the history is far under: the proxy does not reduce it (the agent compacts by itself).
    const wide = { 'x-compactor-options': JSON.stringify({ context_window: 50_000, instant_compaction_share: 0.01 }) };
    await (await send(s, c, turn, wide)).text();
    await ready(s);
    const sentBefore = s.fake.modelRequests().length;
    const res = await send(s, c, compaction, wide);
    const text = await res.text();
    t.equal(res.headers.get('x-compactor'), 'compaction-answered', 'answered, not passed none-ready');
    t.equal(s.fake.modelRequests().length - sentBefore, 0, 'the provider never received it');
    t.match(text, /task 7f3a/, 'the task (the continuation message kept before the summary) is quoted');
    t.match(text, /Running step 5\./, 'the newest call, after the summarized range, is in the digest');
    const id = /Compactor's artifact (art_[0-9a-f]{24})/.exec(text)?.[1];
    t.ok(id, 'the recall pointer names the artifact of the summarized range');
    const view = await s.app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
    const range = (view.json() as { content: { messages: { role: string }[] } }).content.messages;
    const history = turn.messages as unknown[];
    // The calls before the newest, as sent, without the pinned instruction between them.
    t.same(
      range.map((m) => JSON.stringify(m)),
      [2, 3, 5, 6, 7, 8].map((i) => JSON.stringify(history[i])),
      'the range is steps 2 to 4 byte-exact, the pinned system message left out of it',
    );
  },
);

t.test('the rolling summary reads the occupancy fit measured of the call as it goes upstream: it counts nothing', async (t) => {
  const s = await stand(t);
  const c = fixture('claude-code-turn');
  let counted = 0;
  const tokens = s.app.compactor.tokens.bind(s.app.compactor);
  s.app.compactor.tokens = (req) => {
    counted++;
    return tokens(req);
  };
  const body = before(fixture('claude-code-auto'));
  const history = body.messages as unknown[];
  await (await send(s, c, body)).text();
  await ready(s);
  // Grown by as many messages as the next range waits for.
  const more = Array.from({ length: Math.ceil(rollingStep(history.length) / 2) }, (_, i) => [
    { role: 'assistant', content: [{ type: 'text', text: `More numbers, ${i}.` }] },
    { role: 'user', content: 'Go on.' },
  ]).flat();
  await (await send(s, c, { ...body, messages: [...history, ...more] })).text();
  const scope = s.app.compactor.caller(null).scope;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && (await s.app.preparer.context(scope)).entries.length < 2)
    await new Promise((r) => setTimeout(r, 20));
  t.equal((await s.app.preparer.context(scope)).entries.length, 2, 'a range started, and the next one as the history grew');
  t.equal(counted, 0, 'no history counted on the main thread for it');
});

t.test('a conversation the proxy reduces gets no rolling summary: its agent stays under its own limit', async (t) => {
  const s = await stand(t);
  const c = fixture('claude-code-turn');
  const turns = (who: string) =>
    Array.from({ length: 20 }, (_, i) => [
      { role: 'user', content: `${who}: go on with part ${i}.` },
      { role: 'assistant', content: `Part ${i}: ${'numbers '.repeat(1000)}` },
    ]).flat();
  const at = (options: Record<string, unknown>, session: string) => ({
    'x-compactor-options': JSON.stringify({
      context_window: 20_000,
      instant_compaction_share: 0.3,
      policy: 'tokens',
      ...options,
    }),
    'x-claude-code-session-id': session,
  });
  const ask = { role: 'user', content: 'Report.' };
  // Reduced to half the window: the call may still go upstream past the share, but its agent reads the reduced usage.
  const reduced = await send(s, c, { ...c.body, messages: [...turns('A'), ask] }, at({ target_fraction: 0.5 }, 'session-a'));
  await reduced.text();
  t.equal(reduced.headers.get('x-compactor')?.split(';')[0], 'reduced');
  // Then one past the share, not reduced: its range is the only one made.
  const whole = { context_window: 100_000, instant_compaction_share: 0.1, target_fraction: 1, limit: { fraction: 1 } };
  await (await send(s, c, { ...c.body, messages: [...turns('B'), ask] }, at(whole, 'session-b'))).text();
  await ready(s);
  const scope = s.app.compactor.caller(null).scope;
  t.equal((await s.app.preparer.context(scope)).entries.length, 1, "the reduced conversation's summary was never started");
});

t.test('Codex, local form: answered with an ordinary assistant message', async (t) => {
  const s = await stand(t);
  const { res, text, upstream } = await compactAfterTurn(s, fixture('codex-local'));
  t.equal(res.headers.get('x-compactor'), 'compaction-answered');
  t.equal(upstream, 0);
  t.match(text, /response\.completed/);
  t.match(text, /"role":"assistant"/);
  t.notMatch(text, /"type":"compaction"/);
});

t.test(
  "Codex's default model, which the model table does not know: its rolling summary measured against the proxy's window",
  async (t) => {
    // As the README configures Codex: no model line (gpt-6.2-sol), no window in the options; the
    // proxy fits it to COMPACTOR_DEFAULT_CONTEXT_WINDOW, and so does its rolling summary.
    const s = await stand(t, { COMPACTOR_DEFAULT_CONTEXT_WINDOW: '2000' });
    const options = { 'x-compactor-options': JSON.stringify({ instant_compaction_share: 0.1 }) };
    const c = fixture('codex-local-sol');
    await (await send(s, c, before(c), options)).text();
    await ready(s);
    const res = await send(s, c, c.body, options);
    await res.text();
    t.equal(res.headers.get('x-compactor'), 'compaction-answered');
    t.equal(s.fake.modelRequests().length, 1, 'the provider received the turn only');
  },
);

t.test('Codex, trigger form: one sealed compaction item, replaced by its summary on the next request', async (t) => {
  const s = await stand(t);
  const c = fixture('codex-trigger');
  const { res, text, upstream } = await compactAfterTurn(s, c);
  t.equal(res.headers.get('x-compactor'), 'compaction-answered');
  t.equal(upstream, 0);
  const token = new RegExp(`"encrypted_content":"(${SEAL_PREFIX.replace('.', '\\.')}[^"]+)"`).exec(text)?.[1];
  t.ok(token, 'a sealed token of ours');
  const completed = text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.includes('"response.completed"'))
    .map((line) => JSON.parse(line.slice(6)) as { response: { output: { type: string; encrypted_content?: string }[] } });
  t.equal(completed.length, 1, 'one response.completed');
  t.same(
    completed[0]?.response.output.map((o) => o.type),
    ['compaction'],
    'exactly one output item, a compaction item',
  );
  const next = fixture('codex-after-trigger');
  const input = (next.body.input as Record<string, unknown>[]).map((item) =>
    item.type === 'compaction' ? { ...item, encrypted_content: token } : item,
  );
  const later = await send(s, next, { ...next.body, input });
  await later.text();
  const forwarded = JSON.stringify(s.fake.modelRequests().at(-1)?.json);
  t.notMatch(forwarded, /"type":"compaction"/, 'the provider never sees our token');
  t.notMatch(forwarded, new RegExp(SEAL_PREFIX.replace('.', '\\.')));
  t.match(forwarded, /art_[0-9a-f]{24}/, 'the summary text (its recall pointer) took the item’s place');
  t.match(forwarded, /## Goal and constraints\\nSummary of/, 'the LLM summary is in the forwarded request');
  t.match(await metric(s), /provider="openai",outcome="answered"\} 1/);

  // A compaction request that passes (here: opted out) still never carries our token upstream.
  const again = { ...c.body, input: [input.find((i) => i.type === 'compaction'), ...(c.body.input as unknown[])] };
  const passed = await send(s, c, again, { 'x-compactor-instant-compaction': 'off' });
  await passed.text();
  t.equal(passed.headers.get('x-compactor'), 'compaction-passed; reason=opted-out');
  const passedUp = JSON.stringify(s.fake.modelRequests().at(-1)?.json);
  t.match(passedUp, /"type":"compaction_trigger"/, 'the compaction request went upstream');
  t.notMatch(passedUp, new RegExp(SEAL_PREFIX.replace('.', '\\.')), 'its sealed item replaced by the summary text');

  const forged = {
    ...next.body,
    input: input.map((i) => (i.type === 'compaction' ? { ...i, encrypted_content: `${token}x` } : i)),
  };
  const sent = await send(s, next, forged);
  await sent.text();
  const got = JSON.stringify(s.fake.modelRequests().at(-1)?.json);
  t.match(got, `${token}x`, 'a forged item is forwarded as sent');
});

t.test(
  'Codex, trigger form: a second compaction finds the summary prepared after the first (its sealed item put back)',
  async (t) => {
    const s = await stand(t);
    const c = fixture('codex-trigger');
    const first = await compactAfterTurn(s, c);
    t.equal(first.res.headers.get('x-compactor'), 'compaction-answered');
    const token = new RegExp(`"encrypted_content":"(${SEAL_PREFIX.replace('.', '\\.')}[^"]+)"`).exec(first.text)?.[1];
    t.ok(token, 'a sealed token of ours');
    // The conversation goes on after the compaction (its item sealed), long enough for another range.
    const next = fixture('codex-after-trigger');
    const base = (next.body.input as Record<string, unknown>[]).map((item) =>
      item.type === 'compaction' ? { ...item, encrypted_content: token } : item,
    );
    const more = Array.from({ length: TURNS }, (_, i) => [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `Go on, step ${i}.` }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `Step ${i}: ${'figures '.repeat(40)}` }] },
    ]).flat();
    const history = [...base, ...more];
    const turn = await send(s, next, { ...next.body, input: history });
    await turn.text();
    await ready(s);
    const sentBefore = s.fake.modelRequests().length;
    const res = await send(s, c, { ...c.body, input: [...history, { type: 'compaction_trigger' }] });
    const text = await res.text();
    t.equal(res.headers.get('x-compactor'), 'compaction-answered', 'the second compaction is answered too');
    t.equal(s.fake.modelRequests().length - sentBefore, 0, 'the provider never received it');
    t.match(text, /"type":"compaction"/);
    t.match(await metric(s), /provider="openai",outcome="answered"\} 2/);
  },
);
