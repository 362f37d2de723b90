import t from 'tap';
import { instantOptions, ROLLING_SHARE, rollOn } from '../../src/proxy/compaction/wire.js';
import { PROVIDERS } from '../../src/proxy/providers.js';

/**
 * The rolling prepared summary starts by what goes upstream (the reduction's count, what the
 * agent's usage reports and its own compaction starts by), not by the client's whole history:
 * an agent the proxy keeps small is never paid a summary it will not ask for (issue 37).
 */

const provider = PROVIDERS.anthropic;
const reducible = provider.reducible('POST', '/v1/messages');
if (!reducible) throw new Error('no reducible Messages call');

const history = [
  { role: 'user', content: 'Count the modules.' },
  { role: 'assistant', content: 'Counting.' },
  { role: 'user', content: 'Go on.' },
];

function deps() {
  const asked: unknown[] = [];
  const preparer = {
    context: async () => ({ unavailable: false, entries: [] }),
    after: async (_scope: string, what: unknown) => {
      asked.push(what);
    },
  };
  const caller = { scope: 'scope-a' };
  return { asked, deps: { preparer, caller, provider, reducible, headers: {}, compactor: {} } as never };
}

t.test('the default share is ROLLING_SHARE', async (t) => {
  t.equal(instantOptions({}).share, ROLLING_SHARE);
  t.equal(instantOptions({ instant_compaction_share: 0.25 }).share, 0.25);
});

t.test('under the share of the window upstream: nothing is started, whatever the client holds', async (t) => {
  const { asked, deps: d } = deps();
  await rollOn(d, { messages: history }, 0.6, 100_000, 59_000);
  t.equal(asked.length, 0);
});

t.test('past it: the rolling summary of the whole client history is started', async (t) => {
  const { asked, deps: d } = deps();
  await rollOn(d, { messages: history }, 0.6, 100_000, 60_000);
  t.equal(asked.length, 1);
  t.match(asked[0], { prepare: { from: 0, to: history.length } });
});

t.test('no window known, or no history to summarize: nothing is started', async (t) => {
  const { asked, deps: d } = deps();
  await rollOn(d, { messages: history }, 0.6, undefined, 90_000);
  await rollOn(d, { messages: history.slice(0, 1) }, 0.6, 100_000, 90_000);
  t.equal(asked.length, 0);
});
