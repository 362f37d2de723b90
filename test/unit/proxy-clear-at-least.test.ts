import t from 'tap';
import type { ConversationState } from '../../src/proxy/conversation.js';
import { PROXY_CALLS_BETWEEN_BREAKS, PROXY_CLEAR_AT_LEAST, tooSmall, tooSoon } from '../../src/proxy/fit-policy.js';
import type { FitValue } from '../../src/proxy/reduce.js';

const value = (saved: number, decision: string | undefined, target: number | null = 50_000): FitValue => ({
  messages: [],
  applied: true,
  tokens: { before: 40_000, after: 40_000 - saved, saved },
  ...(target === null ? {} : { target }),
  ...(decision === undefined ? {} : { cost: { decision } }),
});

t.test('a reduction that pays must free at least PROXY_CLEAR_AT_LEAST of the target through the proxy', async (t) => {
  const least = PROXY_CLEAR_AT_LEAST * 50_000;
  t.equal(least, 10_000, 'a tenth of the window under target_fraction 0.5');
  t.equal(tooSmall(value(least - 1, 'reduce'), undefined), true, 'just under: not sent');
  t.equal(tooSmall(value(3_000, 'reduce'), undefined), true, 'one tool output cleared right after a reduction: not sent');
  t.equal(tooSmall(value(least, 'reduce'), undefined), false, 'at the minimum: sent');
  t.equal(tooSmall(value(30_000, 'reduce'), undefined), false, 'a large saving: sent');
});

t.test('a forced reduction, or an answer without a cost decision or target, is never held back', async (t) => {
  t.equal(tooSmall(value(100, 'forced'), undefined), false, 'forced past the limit: sent however small');
  t.equal(tooSmall(value(100, undefined), undefined), false, 'no cost decision (policy tokens): sent');
  t.equal(tooSmall(value(100, 'reduce', null), 'cost'), false, 'no target: sent');
  t.equal(tooSmall(value(100, 'reduce'), 'tokens'), false, 'policy tokens (min_saving_fraction rules there): sent');
});

t.test('a break that pays waits PROXY_CALLS_BETWEEN_BREAKS calls after the previous one; a forced one never waits', async (t) => {
  const state = (brokeAt?: number): ConversationState => ({
    v: 1,
    length: 10,
    upstream: [],
    calls: 9,
    ...(brokeAt === undefined ? {} : { brokeAt }),
  });
  t.equal(PROXY_CALLS_BETWEEN_BREAKS, 4);
  t.equal(tooSoon(value(30_000, 'reduce'), state(7), 10), true, 'three calls after: held back');
  t.equal(tooSoon(value(30_000, 'reduce'), state(6), 10), false, 'four calls after: sent');
  t.equal(tooSoon(value(30_000, 'reduce'), state(), 10), false, 'no break yet: sent');
  t.equal(tooSoon(value(30_000, 'reduce'), undefined, 1), false, 'a new conversation: sent');
  t.equal(tooSoon(value(30_000, 'forced'), state(9), 10), false, 'forced past the limit: sent the very next call');
  t.equal(tooSoon(value(30_000, undefined), state(9), 10), false, 'policy tokens (no cost decision): sent');
});
