import t from 'tap';
import { applyPlan } from '../../src/history/plan/apply.js';
import { compose, identity } from '../../src/history/plan/compose.js';
import { evaluatePlan } from '../../src/history/plan/evaluate.js';
import { keepPlan, type Plan } from '../../src/history/plan/types.js';
import { viewOf } from '../../src/history/plan/view.js';
import { prepareRequest } from '../../src/service/request-history.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { callMessage, toolResult } from '../support/messages.js';

const counter = new TokenCounter(1000);
const call = (id: string) => callMessage(id);
const result = toolResult;
const messages = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'task one' },
  call('a'),
  result('a', 'lots of output '.repeat(50)),
  call('b'),
  result('b', 'more output '.repeat(50)),
  { role: 'assistant', content: 'done' },
  { role: 'user', content: 'task two' },
];
const h = prepareRequest({ messages, model: 'gpt-4o' }, counter);
const count = (m: unknown) => counter.countMessage(h.format, h.profile, m);

t.test('a plan that keeps everything changes nothing and is measured as such', async (t) => {
  const plan = keepPlan(messages.length);
  const applied = applyPlan(h, plan, count);
  t.same(applied.messages, messages);
  const e = evaluatePlan(plan, applied);
  t.equal(e.firstChange, messages.length);
  t.equal(
    e.unchangedPrefixTokens,
    h.counts.reduce((a, b) => a + b, 0),
  );
  t.same(e.edited, []);
  t.equal(e.saved, 0);
  t.equal(e.calls, 0);
});

t.test('a replaced result: the first change is where it sits, and what it frees is what it saves', async (t) => {
  const plan: Plan = {
    entries: messages.map((_, index) =>
      index === 3
        ? {
            index,
            edits: [{ op: 'unit', unit: { kind: 'result', slot: 0, text: '(cleared)' }, action: 'clear', artifactId: null }],
          }
        : { index, edits: [] },
    ),
    removed: new Map(),
    artifacts: [],
  };
  const applied = applyPlan(h, plan, count);
  t.equal((applied.messages[3] as { content: string }).content, '(cleared)');
  t.equal(applied.messages[2], messages[2], 'kept messages are the very values that came in');
  const e = evaluatePlan(plan, applied);
  t.same(e.edited, [3]);
  t.equal(e.firstChange, 3);
  t.equal(e.unchangedPrefixTokens, (h.counts[0] ?? 0) + (h.counts[1] ?? 0) + (h.counts[2] ?? 0));
  t.equal(e.freed, (h.counts[3] ?? 0) - count(applied.messages[3]));
  t.equal(e.added, 0);
  t.equal(e.saved, e.freed);
});

t.test('a summary replacing a range: inserted text is added, unwritten summaries are estimated and need calls', async (t) => {
  const plan: Plan = {
    entries: [
      { index: 0, edits: [] },
      { index: 1, edits: [] },
      { insert: [{ kind: 'text', role: 'user', text: 'summary of the range' }] },
      { index: 6, edits: [] },
      { index: 7, edits: [] },
    ],
    removed: new Map([2, 3, 4, 5].map((i) => [i, { action: 'summarize' as const }])),
    artifacts: [],
    unwritten: { calls: 1, tokens: 100 },
  };
  const applied = applyPlan(h, plan, count);
  t.equal(applied.messages.length, 5);
  const e = evaluatePlan(plan, applied);
  t.same(e.edited, [2, 3, 4, 5]);
  t.equal(e.firstChange, 2, 'the insert is the first output message that differs');
  t.equal(
    e.freed,
    [2, 3, 4, 5].reduce((a, i) => a + (h.counts[i] ?? 0), 0),
  );
  t.equal(e.added, count(applied.messages[2]) + 100);
  t.equal(e.saved, e.freed - e.added);
  t.equal(e.calls, 1);
});

t.test('a removal shifts every later position: the first change is the first removed message', async (t) => {
  const plan: Plan = {
    entries: [0, 1, 4, 5, 6, 7].map((index) => ({ index, edits: [] })),
    removed: new Map([
      [2, { action: 'drop' as const }],
      [3, { action: 'drop' as const }],
    ]),
    artifacts: [],
  };
  const e = evaluatePlan(plan, applyPlan(h, plan, count));
  t.equal(e.firstChange, 2);
  t.same(e.edited, [2, 3]);
});

t.test('composed plans equal applying them one after the other, and carry unwritten summaries', async (t) => {
  const first: Plan = {
    entries: messages.map((_, index) =>
      index === 5
        ? {
            index,
            edits: [{ op: 'unit', unit: { kind: 'result', slot: 0, text: '(cleared)' }, action: 'clear', artifactId: null }],
          }
        : { index, edits: [] },
    ),
    removed: new Map(),
    artifacts: [],
  };
  const firstApplied = applyPlan(h, first, count);
  const view = viewOf(h, firstApplied, h.occupancy - firstApplied.freed);
  const second: Plan = {
    entries: [
      { index: 0, edits: [] },
      { index: 1, edits: [] },
      { insert: [{ kind: 'text', role: 'user', text: 'summary' }] },
      { index: 6, edits: [] },
      { index: 7, edits: [] },
    ],
    removed: new Map([2, 3, 4, 5].map((i) => [i, { action: 'summarize' as const }])),
    artifacts: [],
    unwritten: { calls: 1, tokens: 10 },
  };
  const secondApplied = applyPlan(view, second, count);
  const composed = compose(compose(identity(messages.length), first, firstApplied), second, secondApplied);
  const once = applyPlan(h, composed.plan, count);
  t.same(once.messages, secondApplied.messages);
  t.same(composed.plan.unwritten, { calls: 1, tokens: 10 });
  t.equal(evaluatePlan(composed.plan, once).firstChange, 2);
});
