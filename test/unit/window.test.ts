import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { windowStrategy } from '../../src/strategies/sliding-window.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { callMessage, toolResult } from '../support/messages.js';

const compactor = new Compactor(new TokenCounter(1000));
const window = (req: Record<string, unknown>, keep: Record<string, number>, keepFirstUser = true) =>
  compactor.run(windowStrategy, { messages: [], ...req } as Parameters<Compactor['run']>[1], {
    keep,
    keep_first_user: keepFirstUser,
  });

const call = (id: string) => callMessage(id);
const result = toolResult;

const chat = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'task one' },
  call('a'),
  result('a'),
  { role: 'assistant', content: 'done one' },
  { role: 'user', content: 'task two' },
  call('b'),
  result('b'),
  { role: 'user', content: 'task three' },
  call('c'),
  result('c'),
  { role: 'assistant', content: 'done three' },
];

t.test('runs: head, first user message and the newest runs', async (t) => {
  const res = await window({ messages: chat }, { runs: 1 });
  t.same(
    res.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 1, 8, 9, 10, 11],
  );
  t.same(res.extra.dropped, { messages: 6, runs: 2, tokens: res.tokens.saved, last_dropped_run_id: null });
  t.equal(res.actions.filter((a) => a.action === 'drop').length, 6);
  const zero = await window({ messages: chat }, { runs: 0 });
  t.same(zero.messages, res.messages, '{runs: 0} keeps the run in flight');
  const noFirst = await window({ messages: chat }, { runs: 1 }, false);
  t.same(
    noFirst.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 8, 9, 10, 11],
  );
  const all = await window({ messages: chat }, { runs: 3 });
  t.equal(all.applied, false);
  t.equal(all.reason, 'nothing_to_reduce');
});

t.test('messages: the cut grows back to a group start, never below the newest group', async (t) => {
  const res = await window({ messages: chat }, { messages: 1 });
  t.same(
    res.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 1, 11],
  );
  const inside = await window({ messages: chat }, { messages: 2 });
  t.same(
    inside.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 1, 9, 10, 11],
    'a cut between a call and its result moves back to the call',
  );
  t.equal(inside.warnings[0]?.code, 'unsafe_cut_avoided');
  const inFlight = [...chat, call('d')];
  const floor = await window({ messages: inFlight }, { messages: 0 });
  t.same(floor.messages.slice(-1), [inFlight[12]], 'the in-flight call is kept');
});

t.test('run_ids define runs and name the last dropped one', async (t) => {
  const runIds = ['s', 'r1', 'r1', 'r1', 'r1', 'r2', 'r2', 'r2', 'r2', 'r3', 'r3', 'r3'];
  const res = await window({ messages: chat, run_ids: runIds }, { runs: 1 });
  t.equal(res.extra.dropped.last_dropped_run_id, 'r2');
  t.same(
    res.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 1, 9, 10, 11],
    'run r3 starts at a tool exchange',
  );
});

t.test('tokens: whole groups within the budget', async (t) => {
  const counts = compactor.tokens({ messages: chat, model: 'gpt-4o' }).messages;
  const budget = (counts[0] ?? 0) + (counts[1] ?? 0) + (counts[9] ?? 0) + (counts[10] ?? 0) + (counts[11] ?? 0);
  const res = await window({ messages: chat, model: 'gpt-4o' }, { tokens: budget });
  t.same(
    res.messages.map((m) => chat.indexOf(m as (typeof chat)[number])),
    [0, 1, 9, 10, 11],
  );
  const tiny = await window({ messages: chat, model: 'gpt-4o' }, { tokens: 1 });
  t.equal(tiny.warnings.at(-1)?.code, 'target_not_met');
  t.same(tiny.messages.slice(-1), [chat[11]]);
});

t.test('anthropic: the seam never puts two user turns together', async (t) => {
  const messages = [
    { role: 'user', content: 'task' },
    { role: 'assistant', content: 'a1' },
    { role: 'user', content: 'u2' },
    { role: 'assistant', content: 'a2' },
    { role: 'user', content: 'u3' },
  ];
  const res = await window({ messages, format: 'anthropic' }, { messages: 1 });
  t.same(res.messages, [messages[0], messages[3], messages[4]], 'kept from the assistant before');
  const noFirst = await window({ messages, format: 'anthropic' }, { messages: 2 }, false);
  t.same(noFirst.messages, [messages[2], messages[3], messages[4]], 'starts with a user message');
});

t.test('trigger, usage and dry run', async (t) => {
  const below = await compactor.run(
    windowStrategy,
    { messages: chat, trigger: { tokens: 1_000_000 } },
    { keep: { runs: 1 }, keep_first_user: true },
  );
  t.equal(below.reason, 'below_trigger');
  t.equal(below.messages, chat, 'the same history back');
  const byUsage = await compactor.run(
    windowStrategy,
    {
      messages: chat,
      model: 'gpt-4o',
      usage: { prompt_tokens: 90_000, completion_tokens: 100, messages_covered: 11 },
      trigger: { fraction: 0.5 },
    },
    { keep: { runs: 1 }, keep_first_user: true },
  );
  t.equal(byUsage.applied, true, 'reported usage crosses half of gpt-4o’s 128k window');
  t.equal(byUsage.tokens.counting, 'usage+exact');
  t.equal(byUsage.tokens.before, 90_100 + (compactor.tokens({ messages: chat, model: 'gpt-4o' }).messages[11] ?? 0));
  const messagesTrigger = await compactor.run(
    windowStrategy,
    { messages: chat, trigger: { messages: 12 } },
    { keep: { runs: 1 }, keep_first_user: true },
  );
  t.equal(messagesTrigger.applied, true);
  const dry = await compactor.run(
    windowStrategy,
    { messages: chat, dry_run: true },
    { keep: { runs: 1 }, keep_first_user: true },
  );
  t.equal(dry.applied, false);
  t.equal(dry.reason, 'dry_run');
  t.equal(dry.messages, chat);
  t.ok(dry.tokens.saved > 0, 'reports what it would save');
  await t.rejects(
    compactor.run(
      windowStrategy,
      { messages: chat, model: 'mystery', trigger: { fraction: 0.5 } },
      { keep: { runs: 1 }, keep_first_user: true },
    ),
    { code: 'CMP_ERR_OPTIONS_INVALID' },
  );
});
