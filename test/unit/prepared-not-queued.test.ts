import t from 'tap';
import type { Warning } from '../../src/history/types.js';
import { OPERATIONS, type PreparedStore } from '../../src/service/operations.js';

const range = { id: 'r1', prefix: 'p', from: 1, to: 5, body: {} };

/** A preparer whose queue did not take the job: `after` says so, as `RedisPreparer` does. */
const notQueued: PreparedStore = {
  context: async () => ({ entries: [], byDefault: true, settled: async () => false }),
  after: async (): Promise<Warning[]> => [
    { code: 'prepared_unavailable', message: 'the summary asked for was not queued: the store did not answer' },
  ],
};

/**
 * Issue 39 #7: a fit whose prepared summary was not queued answered `prepared.state: "started"`
 * and the warning that it was not queued, together. The warning stays; the response no longer
 * names a summary that nobody is making.
 */
t.test('a fit whose prepared summary was not queued names none, and warns', async (t) => {
  const fit = OPERATIONS['/v1/fit'];
  const value = { warnings: [] as Warning[], prepared: { id: 'r1', state: 'started', covers: { from: 1, to: 5 } } };
  const outcome = await fit.around(notQueued, 'scope', {}, async () => ({ value, prepare: range }));
  t.equal(value.prepared, undefined, 'no prepared summary named');
  t.same(
    value.warnings.map((w) => w.code),
    ['prepared_unavailable'],
  );
  t.equal(outcome.prepare, range, 'the outcome is otherwise unchanged');
});

t.test('a spliced summary stays named when the next one was not queued', async (t) => {
  const fit = OPERATIONS['/v1/fit'];
  const value = { warnings: [] as Warning[], prepared: { id: 'r0', state: 'spliced', covers: { from: 1, to: 3 } } };
  await fit.around(notQueued, 'scope', {}, async () => ({ value, prepare: range, spliced: 'r0' }));
  t.equal(value.prepared?.id, 'r0');
});
