import t from 'tap';
import { OPERATIONS, type Outcome, type PreparedStore } from '../../src/service/operations.js';
import { STRATEGIES } from '../../src/strategies/registry.js';
import type { PreparedContext, PrepareRequest } from '../../src/strategies/types.js';

/** A preparer that records what it was asked, with one entry to hand out. */
function recording() {
  const calls: string[] = [];
  const context: PreparedContext = { entries: [], byDefault: true };
  const preparer: PreparedStore = {
    context: async (scope) => {
      calls.push(`context ${scope}`);
      return context;
    },
    after: async (scope, outcome) => {
      calls.push(`after ${scope} ${outcome.spliced ?? '-'} ${outcome.prepare?.id ?? '-'}`);
      return outcome.prepare?.id === 'late' ? [{ code: 'prepared_unavailable', message: 'not queued' }] : [];
    },
  };
  return { calls, context, preparer };
}

const outcome: Outcome = { value: {}, spliced: 'r1', prepare: { id: 'r2' } as PrepareRequest };

t.test('every strategy in the registry has its operation, in the registry order', async (t) => {
  const strategyUrls = Object.keys(OPERATIONS).filter(
    (url) => !['/v1/tokens', '/v1/validate', '/v1/expand', '/mcp/search', '/mcp/recall'].includes(url),
  );
  t.same(
    strategyUrls,
    Object.keys(STRATEGIES).map((kind) => `/v1/${kind}`),
  );
});

t.test("fit's operation reads the caller's prepared summaries before its work and hands them its outcome after", async (t) => {
  const { calls, context, preparer } = recording();
  let given: PreparedContext | undefined;
  const result = await OPERATIONS['/v1/fit'].around(preparer, 's1', undefined, async (prepared) => {
    given = prepared;
    calls.push('work');
    return outcome;
  });
  t.equal(given, context, 'the work runs with the context the preparer gave');
  t.equal(result, outcome);
  t.same(calls, ['context s1', 'work', 'after s1 r1 r2']);
});

t.test('fit hands the preparer nothing when its work fails', async (t) => {
  const { calls, preparer } = recording();
  const failing = OPERATIONS['/v1/fit'].around(preparer, 's1', undefined, async () => {
    throw new Error('upstream');
  });
  await t.rejects(failing, { message: 'upstream' });
  t.same(calls, ['context s1']);
});

t.test('the other operations never touch the preparer', async (t) => {
  for (const url of [
    '/v1/window',
    '/v1/compact',
    '/v1/summarize',
    '/v1/tokens',
    '/v1/validate',
    '/v1/expand',
    '/mcp/search',
    '/mcp/recall',
  ] as const) {
    const { calls, preparer } = recording();
    let given: PreparedContext | undefined = { entries: [], byDefault: false };
    await OPERATIONS[url].around(preparer, 's1', undefined, async (prepared) => {
      given = prepared;
      return outcome;
    });
    t.equal(given, undefined, `${url} runs without prepared summaries`);
    t.same(calls, [], `${url} asks the preparer nothing`);
  }
});

t.test('fit leaves the preparer alone for a body that cannot use it, and passes on what it could not queue', async (t) => {
  for (const body of [{ prepare: { enabled: false } }, { dry_run: true }]) {
    const { calls, preparer } = recording();
    let given: PreparedContext | undefined = { entries: [], byDefault: false };
    await OPERATIONS['/v1/fit'].around(preparer, 's1', body, async (prepared) => {
      given = prepared;
      return outcome;
    });
    t.equal(given, undefined, `${JSON.stringify(body)}: no prepared summaries read`);
    t.same(calls, ['after s1 r1 r2'], `${JSON.stringify(body)}: the index is not asked before`);
  }
  const { preparer } = recording();
  const late: Outcome = { value: { warnings: [] }, prepare: { id: 'late' } as PrepareRequest };
  const result = await OPERATIONS['/v1/fit'].around(preparer, 's1', {}, async () => late);
  t.same((result.value as { warnings: unknown[] }).warnings, [{ code: 'prepared_unavailable', message: 'not queued' }]);
});
