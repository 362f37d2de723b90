import t from 'tap';
import type { CostModel, Estimate } from '../../src/cost/estimate.js';
import { type Candidate, type Decision, decide, type Measurements, payingAt } from '../../src/strategies/fit/decide.js';
import { SummarizeOptions } from '../../src/strategies/summarize/options.js';

const MODEL: CostModel = {
  prices: { input: 1, cached: 0.1, write: 1.25, output: 5, unit: 'relative', source: 'request' },
  summarizer: { input: 1, cached: 0.1, write: 1, output: 5, unit: 'relative', source: 'request' },
  cache: { end: 10, tokens: 50_000, source: 'usage' },
  occupancy: 50_000,
  fixed: 1000,
  horizon: 50,
  horizonSource: 'request',
  growth: 0,
  calls: 10,
};

/** An estimate that pays (`net` > 0, a batch met) or not. */
const priced = (net: number, saved = 5000, batch = 0): Estimate => ({
  rewriteTokens: 20_000,
  rewriteCost: 0.02,
  summarizerCost: 0,
  savingPerCall: 0.0005,
  paybackCalls: net > 0 ? 40 : null,
  net,
  nextCall: { asIs: 0.05, reduced: 0.07 },
  saved,
  batch,
});
const compact = (net: number, batch = 0): Candidate => ({ kind: 'compact', estimate: priced(net, 5000, batch) });
const summary = (net: number): Candidate => ({ kind: 'summarize', estimate: priced(net, 20_000) });
const READY = {
  entry: { id: 'p1', prefix: 'x', from: 2, to: 30, state: 'ready' as const },
  options: SummarizeOptions.parse({ keep: { messages: 4 } }),
};

const base: Measurements = {
  policy: 'cost',
  occupancy: 50_000,
  target: 30_000,
  limit: 60_000,
  forced: false,
  model: MODEL,
  candidates: [],
  pending: false,
  ready: undefined,
  resent: false,
};

/** The decision's kind, and for a deferral its reason and the candidates it reports. */
function shape(d: Decision): string {
  if (d.kind === 'defer')
    return `defer ${d.reason} [${d.considered.map((c) => c.kind).join(',')}]${d.warning ? ' +warning' : ''}`;
  if (d.kind === 'summarize' || d.kind === 'splice') return `${d.kind}${d.ifFailed ? ` else ${shape(d.ifFailed)}` : ''}`;
  return d.kind;
}

const TABLE: [string, Partial<Measurements>, string][] = [
  ['policy tokens, under the target', { policy: 'tokens', occupancy: 20_000 }, 'defer below_trigger []'],
  ['policy tokens, over the target: every stage', { policy: 'tokens' }, 'ladder'],
  ['policy tokens ignores candidates and the limit', { policy: 'tokens', forced: true, candidates: [compact(1)] }, 'ladder'],
  ['policy cost above the limit: forced, whatever pays', { forced: true, candidates: [compact(-1)] }, 'forced'],
  ['nothing to reduce', {}, 'defer nothing_to_reduce []'],
  ['compaction does not pay', { candidates: [compact(-1)] }, 'defer does_not_pay [compact] +warning'],
  ['a batch too small to pay yet', { candidates: [compact(1, 10_000)] }, 'defer does_not_pay [compact] +warning'],
  ['compaction pays', { candidates: [compact(1)] }, 'compact'],
  ['compaction pays more than the summary', { candidates: [compact(2), summary(1)] }, 'compact'],
  ['the summary pays more: compaction stands if it fails', { candidates: [compact(1), summary(2)] }, 'summarize'],
  [
    'only the summary pays: if it fails, nothing changes',
    { candidates: [compact(-1), summary(2)] },
    'summarize else defer does_not_pay [compact] +warning',
  ],
  ['a ready prepared summary is spliced', { candidates: [compact(1), summary(2)], ready: READY }, 'splice'],
  [
    'the summary being prepared is waited for',
    { candidates: [compact(1), summary(2)], pending: true, ready: READY },
    'defer summary_being_prepared [compact,summarize]',
  ],
  [
    'a summary spliced into a shorter history sent again is spliced again while the next is made',
    { candidates: [compact(1), summary(2)], pending: true, ready: READY, resent: true },
    'splice',
  ],
  ['pending matters only when the summary is best', { candidates: [compact(2), summary(1)], pending: true }, 'compact'],
  [
    'neither pays, the summary pending',
    { candidates: [compact(-2), summary(-1)], pending: true },
    'defer does_not_pay [compact,summarize] +warning',
  ],
];

t.test('decide: measured candidates in, one decision out', async (t) => {
  for (const [label, over, expected] of TABLE) t.equal(shape(decide({ ...base, ...over })), expected, label);
});

t.test('a deferral reports the best candidate and when to call again', async (t) => {
  const d = decide({ ...base, candidates: [compact(-3), summary(-1)] });
  if (d.kind !== 'defer') throw new Error(`expected a deferral, got ${d.kind}`);
  t.equal(d.best?.kind, 'summarize', 'the larger net saving');
  t.equal(d.callAgainAt, payingAt(base, d.best?.estimate));
  t.ok(d.callAgainAt > base.occupancy && d.callAgainAt <= base.limit + 1, 'later, and at the latest where it is forced');
  t.match(d.warning?.message, /the best reduction \(summarize\) would free 20000 tokens/);
  const under = decide({ ...base, policy: 'tokens', occupancy: 10_000 });
  t.equal(under.kind === 'defer' && under.callAgainAt, base.target, 'policy tokens calls again at the target');
});

t.test(
  'payingAt: forced past the limit; nothing saved waits for the limit; a deficit is made up by tokens to clear',
  async (t) => {
    t.equal(payingAt(base, undefined), base.limit + 1);
    t.equal(payingAt(base, priced(1, 0)), base.limit + 1, 'nothing saved');
    t.equal(payingAt(base, priced(1)), base.occupancy + 1, 'pays now: the next token');
    // 0.01 short at 0.1 × 50 calls per million tokens: 2000 tokens more.
    t.equal(payingAt(base, priced(-0.01)), base.occupancy + 2000);
    t.equal(payingAt(base, priced(-1)), base.limit + 1, 'never before it is forced');
  },
);

t.test('decide is pure: the same measurements, the same decision, nothing changed', async (t) => {
  const m: Measurements = { ...base, candidates: [compact(-1), summary(2)] };
  const before = JSON.stringify(m);
  t.same(decide(m), decide(m));
  t.equal(JSON.stringify(m), before);
});
