import t from 'tap';
import { buildWithLlm } from '../support/app.js';
import { conversation, SYSTEM } from '../support/prepared.js';

/**
 * Issue 39 #10: after Redis lost its data, a replica that made a new installation secret expanded
 * the other replica's summary into nothing and said nothing (`missing: []`, no warning). Its
 * marker does not verify under the new secret: the summary stays, and the expand says so.
 */
t.test('an expand of a summary signed under another secret says it cannot verify it, and keeps it', async (t) => {
  const a = await buildWithLlm(t, { COMPACTOR_ARTIFACT_SECRET: 'a-secret-0123456789-0123456789-0123456789' });
  const b = await buildWithLlm(t, { COMPACTOR_ARTIFACT_SECRET: 'b-secret-0123456789-0123456789-0123456789' });
  const messages = [SYSTEM, ...conversation(12)];
  const summarized = (
    await a.app.inject({ method: 'POST', url: '/v1/summarize', payload: { messages, keep: { messages: 4 } } })
  ).json();
  t.equal(summarized.applied, true);

  const foreign = (await b.app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: summarized.messages } })).json();
  t.same(foreign.messages, summarized.messages, 'left as it is');
  t.equal(foreign.restored, 0);
  t.same(
    foreign.warnings.map((w: { code: string }) => w.code),
    ['placeholder_not_verified'],
    'and said, rather than restoring nothing silently',
  );

  const own = (await a.app.inject({ method: 'POST', url: '/v1/expand', payload: { messages: summarized.messages } })).json();
  t.same(own.messages, messages, 'its own replica restores it');
  t.same(own.warnings, [], 'without a warning');
});
