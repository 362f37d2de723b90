import t from 'tap';
import { build, fakeLlm } from '../support/app.js';
import { gate } from '../support/fake-openai.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import { conversation, SYSTEM } from '../support/prepared.js';

/**
 * No wait, ever, on the proxy's path (issue 37): over real HTTP, against the fake provider, with a
 * summarizer that answers nothing until the test lets it. Every proxied request is answered while
 * no summarizer call has completed, the one over the limit included: with no LLM summary ready,
 * the extractive summary stands in.
 */

t.test('no proxied request is answered only after a summarizer call completed', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const llm = await fakeLlm(t);
  const held = gate(t);
  let completed = 0;
  llm.fallback = () => ({
    until: held.until.then(() => completed++),
    content: '## Goal and constraints\nExplain the modules.\n## Current state\nHalf done.',
  });
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    COMPACTOR_PREPARE: 'on',
    // Far longer than any reduction: a request that waited on the summarizer would not come back past it.
    COMPACTOR_PROXY_BUDGET_MS: '60000',
    COMPACTOR_PROXY_OPTIONS: JSON.stringify({
      target_tokens: 3000,
      limit: { tokens: 3600 },
      summarize: { keep: { messages: 6 } },
      prepare: { at: { tokens: 1500 } },
    }),
  });
  const { base } = await listen(app);
  const send = async (messages: unknown[]) => {
    const res = await fetch(`${base}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-user', 'session-id': 'nowait-1' },
      body: JSON.stringify({ model: 'gpt-4o', messages }),
    });
    await res.text();
    t.equal(completed, 0, 'answered while no summarizer call has completed');
    return { status: res.status, compactor: String(res.headers.get('x-compactor')) };
  };
  let history: unknown[] = [SYSTEM, ...conversation(8, 0, true)];
  const answers = [await send(history)];
  for (let turn = 8; turn < 40; turn += 2) {
    history = [...history, ...conversation(2, turn, true)];
    answers.push(await send(history));
  }
  const actions = answers.map((a) => a.compactor.split(';')[0]);
  t.ok(
    answers.every((a) => a.status === 200),
    'every request answered',
  );
  t.notOk(
    answers.some((a) => a.compactor.includes('bypass')),
    `no bypass (${answers.map((a) => a.compactor).join(', ')})`,
  );
  t.ok(actions.includes('reduced'), 'the conversation was reduced past the limit');
  t.ok(llm.requests.length >= 1, 'a summary was being prepared (held) all along');
  // Every upstream request stayed under the limit, none waited: the extractive summary stood in.
  const upstream = fake.modelRequests().map((r) => JSON.stringify(r.json));
  t.ok(
    upstream.some((body) => body.includes('extractive: no LLM was used')),
    'the extractive summary stood in upstream',
  );
  held.open();
});
