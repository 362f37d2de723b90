import t from 'tap';
import { buildWithLlm } from '../support/app.js';
import { gate } from '../support/fake-openai.js';
import { conversation, fit, fitBody, SYSTEM, settled } from '../support/prepared.js';

/**
 * `summarizer_wait: never` (the proxy's default) through the real app and a fake OpenAI-compatible
 * summarizer (real HTTP): a reduction that needs a summary while no LLM summary is ready takes the
 * extractive one at once, calling no model, and says so; the LLM summary prepared off the request
 * path folds it at the next reduction.
 */

const codes = (json: { warnings: { code: string }[] }) => json.warnings.map((w) => w.code);
const NEVER = { summarizer_wait: 'never' };

t.test('forced with no LLM summary ready: the extractive summary stands in, no model is called', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const over = [SYSTEM, ...conversation(24, 0, true)];
  const body = fitBody(over, { ...NEVER, policy: 'cost', limit: { tokens: 3200 }, prepare: { enabled: false } });
  const a = await fit(app, body);
  t.equal(a.status, 200);
  t.equal(a.json.applied, true);
  t.equal(a.json.cost.decision, 'forced');
  t.equal(server.requests.length, 0, 'no summarizer call was made for this request');
  t.ok(codes(a.json).includes('summary_extractive_standin'), 'the stand-in is reported');
  t.match(a.json.summary, { cached: false });
  t.ok(a.json.tokens.after <= 3000, `under the target (${a.json.tokens.after})`);
  const text = JSON.stringify(a.json.messages);
  t.match(text, /extractive: no LLM was used/, 'the summary is the extractive digest');

  // The same request without the option pays for an LLM summary on the request path.
  const waits = await fit(app, { ...body, summarizer_wait: 'allowed' });
  t.equal(waits.json.applied, true);
  t.equal(server.requests.length, 1, 'allowed: the LLM is called on the request path');
  t.notOk(codes(waits.json).includes('summary_extractive_standin'));
});

t.test('an LLM summary already in the summary cache is used, not the stand-in', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const over = [SYSTEM, ...conversation(24, 0, true)];
  const body = fitBody(over, { policy: 'cost', limit: { tokens: 3200 }, prepare: { enabled: false } });
  const made = await fit(app, body);
  t.equal(server.requests.length, 1, 'made once, on the request path');
  const again = await fit(app, { ...body, ...NEVER });
  t.equal(server.requests.length, 1, 'no call this time');
  t.notOk(codes(again.json).includes('summary_extractive_standin'), 'the cached LLM summary is used');
  t.equal(again.json.summary.cached, true);
  t.same(again.json.messages.length, made.json.messages.length);
});

t.test('a prepared summary still being made is not waited for: the stand-in, then the LLM summary folds it', async (t) => {
  const { app, server } = await buildWithLlm(t);
  // Every summarizer answer is held until the test lets it go: a call that waited on one could not answer.
  const held = gate(t);
  server.fallback = (req) => ({ until: held.until, content: `## Goal\nSummary of ${req.messages.length} messages.` });
  const opts = { ...NEVER, prepare: { enabled: true, at: { tokens: 1500 }, wait_ms: 60_000 } };
  const first = [SYSTEM, ...conversation(12, 0, true)];
  const a = await fit(app, fitBody(first, opts));
  t.equal(a.json.prepared?.state, 'started');
  const deadline = Date.now() + 60_000;
  while (server.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.equal(server.requests.length, 1, 'the prepared summary is being made (held)');
  const over = [...a.json.messages, ...conversation(12, 12, true)];
  const b = await fit(app, fitBody(over, opts));
  t.equal(b.json.applied, true, 'answered while the summarizer is held: nothing waited on it');
  t.not(b.json.prepared?.state, 'spliced');
  t.ok(codes(b.json).includes('summary_extractive_standin'), 'the extractive summary stood in');
  t.match(JSON.stringify(b.json.messages), /extractive: no LLM was used/);
  held.open();
  // The agent goes on; a prepared LLM summary of the next range folds what stands in.
  let last = b.json;
  for (let i = 0, step = 24; i < 12 && last.prepared?.state !== 'spliced'; i++, step += 3) {
    const history = [...last.messages, ...conversation(3, step, true)];
    last = (await fit(app, fitBody(history, opts))).json;
    if (last.prepared?.state === 'started' || last.prepared?.state === 'running')
      t.equal((await settled(app, last.prepared.id)).state, 'ready');
  }
  t.equal(last.prepared?.state, 'spliced', 'a later reduction splices the prepared LLM summary');
  t.not(last.summary?.parent_id ?? null, null, 'which folds the earlier summary');
  t.notOk(codes(last).includes('summary_extractive_standin'));
  t.notOk(JSON.stringify(last.messages).includes('extractive: no LLM was used'), 'the extractive digest is folded away');
});

t.test('a steady session: the default prepare starts early enough that the summary is ready when it is due', async (t) => {
  const { app, server } = await buildWithLlm(t);
  const held = gate(t);
  server.fallback = (req) => ({ until: held.until, content: `## Goal\nSummary of ${req.messages.length} messages.` });
  // Default `prepare.at`: from the history's growth per call.
  const opts = { ...NEVER, prepare: { enabled: true } };
  let history: unknown[] = [SYSTEM, ...conversation(4, 0, true)];
  let startedAt: number | undefined;
  let id: string | undefined;
  let needed: { call: number; json: Record<string, unknown> & { warnings: { code: string }[] } } | undefined;
  for (let call = 0; call < 60 && !needed; call++) {
    history = [...history, ...conversation(1, 4 + call, true)];
    const { json } = await fit(app, fitBody(history, opts));
    if (json.applied) needed = { call, json };
    else history = json.messages;
    if (startedAt === undefined && json.prepared?.state === 'started') {
      startedAt = call;
      id = json.prepared.id;
    }
    // The summarizer takes two of the agent's calls to answer (ready before the third).
    if (startedAt !== undefined && call === startedAt + 1) {
      held.open();
      t.equal((await settled(app, id ?? '')).state, 'ready');
    }
  }
  t.ok(startedAt !== undefined && needed, `prepared at call ${startedAt}, needed at call ${needed?.call}`);
  t.ok((needed?.call ?? 0) - (startedAt ?? 0) >= 2, 'started at least two calls before it was due');
  t.equal((needed?.json.prepared as { id?: string } | undefined)?.id, id, 'the one prepared then');
  t.equal((needed?.json.prepared as { state?: string } | undefined)?.state, 'spliced', 'the call that needs it splices it');
  t.notOk(needed && codes(needed.json).includes('summary_extractive_standin'), 'no stand-in was needed');
});
