import t from 'tap';
import type { CallOutcome } from '../../src/proxy/outcome.js';
import { CallReport } from '../../src/proxy/report.js';

/** The proxy's one line per model call names an agent's own compaction request by its label, and only that call. */

function capture() {
  const info: Record<string, unknown>[] = [];
  const warn: Record<string, unknown>[] = [];
  return {
    info,
    warn,
    log: { info: (o: Record<string, unknown>) => info.push(o), warn: (o: Record<string, unknown>) => warn.push(o) },
  };
}

const call = (over: Partial<CallOutcome>): CallOutcome => ({
  provider: 'anthropic',
  model: 'claude-opus-4-8',
  conversation: 'c1',
  outcome: 'unchanged',
  reason: undefined,
  tokens: { before: 10, after: 10, saved: 0 },
  prefix: 'kept',
  ms: 1.23,
  ...over,
});

t.test('compaction=<label> on the line of a compaction request, absent on any other', async (t) => {
  const { info, warn, log } = capture();
  const report = new CallReport(log);
  report.call(call({ outcome: 'answered', compaction: { label: 'answered', header: 'compaction-answered' } }), 's');
  report.call(call({ compaction: { label: 'passed_none_ready', header: 'compaction-passed; reason=none-ready' } }), 's');
  report.call(call({ outcome: 'reduced' }), 's');
  t.equal(info.length, 3, 'one line per call');
  t.equal(info[0]?.compaction, 'answered');
  t.equal(info[0]?.outcome, 'answered');
  t.equal(info[1]?.compaction, 'passed_none_ready');
  t.notOk('compaction' in (info[2] ?? {}), 'an ordinary call has no compaction field');
  t.equal(warn.length, 0);
});
