import t from 'tap';
import { PriceTable } from '../../src/cost/prices.js';
import { formatByName } from '../../src/formats/registry.js';
import { addresser } from '../../src/history/address.js';
import type { FormatAdapter } from '../../src/history/format.js';
import type { Markers } from '../../src/history/markers.js';
import { markers } from '../../src/history/markers.js';
import { applyPlan } from '../../src/history/plan/apply.js';
import { viewOf } from '../../src/history/plan/view.js';
import type { Caller } from '../../src/service/artifacts.js';
import { Compactor } from '../../src/service/compactor.js';
import { Preparer } from '../../src/service/prepare.js';
import { parseJsonBytes } from '../../src/service/request-body.js';
import { prepareRequest } from '../../src/service/request-history.js';
import { MemoryStore } from '../../src/store/memory.js';
import { compactStrategy } from '../../src/strategies/compact.js';
import { CompactOptions } from '../../src/strategies/compact-options.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { SummarizeOptions, summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { PrepareRequest } from '../../src/strategies/types.js';
import { ExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import type { SummaryPlan, SummaryRequest } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';

/**
 * What one call computes over the whole history, counted: each summarized range is stringified and
 * hashed once per call, a fit's views are made once, and a dry run's summary plan is made once per
 * range across calls (a later call with the same range finds it).
 */

const SECRET = 'call-work-secret-0123456789abcdef';

/** The extractive summarizer, counting the plans it is asked for (and what each read). */
class CountingSummarizer extends ExtractiveSummarizer {
  plans: number[] = [];
  override plan(request?: SummaryRequest): SummaryPlan {
    this.plans.push(request?.entries.length ?? -1);
    return super.plan();
  }
}

/** A conversation of tool calls and results (results large enough to compact and summarize). */
function history(calls: number): unknown[] {
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the failing test in src/app.ts.' },
  ];
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    messages.push({
      role: 'assistant',
      content: `Step ${i}: reading the next file.`,
      tool_calls: [
        { id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: `cat src/file${i}.ts` }) } },
      ],
    });
    messages.push({
      role: 'tool',
      tool_call_id: id,
      content: `file ${i}:\n${`export const v${i} = compute(${i});\n`.repeat(40)}`,
    });
  }
  return messages;
}
const fresh = (n: number) => JSON.parse(JSON.stringify(history(n))) as unknown[];

/** A caller whose addresser counts the range payloads it names (by their JSON). */
function countingCaller(scope: string): Caller & { ranges: string[] } {
  const address = addresser(SECRET, scope);
  const ranges: string[] = [];
  return {
    scope,
    markers: markers(SECRET, scope),
    ranges,
    address: Object.assign(
      (json: string) => {
        if (json.startsWith('{"messages":[')) ranges.push(json);
        return address(json);
      },
      { ofDigest: address.ofDigest, keyName: address.keyName },
    ),
  };
}

t.test('a fit call stringifies and hashes each summarized range once', async (t) => {
  // Without prepared summaries, and with (the next range is planned too, over the same views).
  for (const prepared of [undefined, { entries: [], byDefault: true, settled: async () => false }]) {
    const summarizer = new CountingSummarizer();
    const compactor = new Compactor(new TokenCounter(10_000), { store: new MemoryStore(), secret: SECRET, summarizer });
    const o = FitOptions.parse({ target_tokens: 2000 });
    const caller = countingCaller('fit');
    const out = await compactor.run(fitStrategy, { messages: fresh(30), model: 'gpt-4o' }, o, { caller, prepared });
    const name = prepared ? 'preparing' : 'not preparing';
    if (prepared) t.ok(out.extra.prepared?.id, 'preparing: the next range asked for');
    else
      t.ok(
        out.extra.stages.some((s) => s.strategy === 'summarize' && s.applied),
        'not preparing: a summary was made',
      );
    t.ok(caller.ranges.length > 0, `${name}: ranges were named`);
    t.equal(new Set(caller.ranges).size, caller.ranges.length, `${name}: no range named twice (${caller.ranges.length} named)`);
    t.ok(
      summarizer.plans.length > 0 && summarizer.plans.every((n) => n > 0),
      `${name}: the cost planner planned the summary from the range`,
    );
  }
});

t.test('a dry run plans a range once; a later call over the same range finds the plan', async (t) => {
  const summarizer = new CountingSummarizer();
  const compactor = new Compactor(new TokenCounter(10_000), { store: new MemoryStore(), secret: SECRET, summarizer });
  const o = SummarizeOptions.parse({ keep: { messages: 6 } });
  const run = (messages: unknown[], options = o, scope = 'a') =>
    compactor.run(summarizeStrategy, { messages, model: 'gpt-4o', dry_run: true }, options, { caller: countingCaller(scope) });
  const first = await run(fresh(20));
  t.equal(summarizer.plans.length, 1, 'planned');
  t.ok((summarizer.plans[0] ?? 0) > 0, 'from the range read as entries');
  const again = await run(fresh(20));
  t.equal(summarizer.plans.length, 1, 'the same range again: not planned again');
  t.same(again.extra, first.extra, 'the same plan answered');
  t.same(again.tokens, first.tokens);
  await run(fresh(21));
  t.equal(summarizer.plans.length, 2, 'a longer history, another range: planned');
  await run(fresh(20), SummarizeOptions.parse({ keep: { messages: 6 }, summarizer: { max_tokens: 300 } }));
  t.equal(summarizer.plans.length, 3, 'other summarizer options: planned');
  await run(fresh(20), o, 'b');
  t.equal(summarizer.plans.length, 4, 'another caller: planned (no plan is shared between callers)');
  // The plan answered is the caller's own: changing it changes nothing kept.
  const mine = (await run(fresh(20))).extra.plan;
  mine?.calls.push({ purpose: 'summary', input_tokens: 1 });
  t.same((await run(fresh(20))).extra.plan, first.extra.plan, 'a copy each time');
});

t.test('a view of an applied plan is made once and shared', async (t) => {
  const counter = new TokenCounter(10_000);
  const h = prepareRequest({ messages: fresh(12), model: 'gpt-4o' }, counter);
  const caller = countingCaller('view');
  const cost = { table: new PriceTable(), fixed: 0, markers: caller.markers };
  const ctx = { counter, profile: h.profile, address: caller.address, markers: caller.markers, cost };
  const out = compactStrategy.run(h, CompactOptions.parse({ keep_tool_uses: 2, min_tokens: 10 }), ctx);
  const plan = (await out).plan;
  if (!plan) throw new Error('nothing compacted');
  const applied = applyPlan(h, plan, (m) => counter.countMessage(h.format, h.profile, m));
  const view = viewOf(h, applied, 1000);
  t.equal(viewOf(h, applied, 1000), view, 'the same applied plan and occupancy: the same view');
  t.not(viewOf(h, applied, 999), view, 'another occupancy: another view');
  t.equal(viewOf(h, applied, 999).occupancy, 999);
  t.equal(view.messages, applied.messages);
});

/** The messages as a request body brings them: tagged by their bytes (`content-tag.ts`). */
const tagged = (messages: unknown[]) =>
  (parseJsonBytes(Buffer.from(JSON.stringify({ messages }))) as { messages: unknown[] }).messages;

/** A caller whose signer counts the placeholders it signs. */
function signingCaller(scope: string): Caller & { signed: () => number } {
  let signed = 0;
  const counting = (own: Markers): Markers => ({
    ...own,
    name: own.name,
    recallTool: own.recallTool,
    withRecallTool: (tool) => counting(own.withRecallTool(tool)),
    placeholder(site, binding, id, text) {
      signed++;
      return own.placeholder(site, binding, id, text);
    },
  });
  return { scope, markers: counting(markers(SECRET, scope)), address: addresser(SECRET, scope), signed: () => signed };
}

t.test('a second call over the same tagged results signs no placeholder again, and answers the same', async (t) => {
  const compactor = new Compactor(new TokenCounter(10_000), { store: new MemoryStore(), secret: SECRET });
  const o = CompactOptions.parse({ keep_tool_uses: 2, min_tokens: 10 });
  const run = (messages: unknown[], caller: Caller) =>
    compactor.run(compactStrategy, { messages, model: 'gpt-4o' }, o, { caller });
  const plain = await run(fresh(16), signingCaller('outcome-a'));
  const a = signingCaller('outcome-a');
  const first = await run(tagged(fresh(16)), a);
  const signedFirst = a.signed();
  t.ok(signedFirst >= 10, `the first tagged call signed its placeholders (${signedFirst})`);
  t.same(first.messages, plain.messages, 'tagged or not: the same messages');
  t.same(first.extra.artifacts, plain.extra.artifacts, 'the same originals');
  const second = await run(tagged(fresh(16)), a);
  t.equal(a.signed(), signedFirst, 'the same results again: none signed again');
  t.same(second.messages, first.messages, 'the same messages');
  t.same(second.tokens, first.tokens, 'counted the same');
  // The conversation grown by two calls: only the results newly compacted are signed.
  const grown = await run(tagged(fresh(18)), a);
  t.equal(a.signed() - signedFirst, 2, 'grown by two calls: two results signed');
  t.same(grown.messages, (await run(fresh(18), signingCaller('outcome-a'))).messages, 'as untagged');
  // Another caller (another key) finds nothing of the first's: its own MACs.
  const b = signingCaller('outcome-b');
  const other = await run(tagged(fresh(16)), b);
  t.equal(b.signed(), signedFirst, 'another caller signs its own');
  t.not(JSON.stringify(other.messages), JSON.stringify(first.messages), 'with its own key');
  t.same(other.messages, (await run(fresh(16), signingCaller('outcome-b'))).messages, 'as untagged');
});

t.test("a fit call parses each view's messages once", async (t) => {
  const format = formatByName('openai-chat') as FormatAdapter;
  const parse = format.parse;
  const parsed: unknown[] = [];
  format.parse = (messages) => {
    parsed.push(messages);
    return parse.call(format, messages);
  };
  t.teardown(() => {
    format.parse = parse;
  });
  const compactor = new Compactor(new TokenCounter(10_000), {
    store: new MemoryStore(),
    secret: SECRET,
    summarizer: new ExtractiveSummarizer(),
  });
  // Preparing: the next range is planned over the compacted view `measure` made.
  const prepared = { entries: [], byDefault: true, settled: async () => false };
  const o = FitOptions.parse({ target_tokens: 2000 });
  const out = await compactor.run(fitStrategy, { messages: tagged(fresh(30)), model: 'gpt-4o' }, o, {
    caller: countingCaller('views'),
    prepared,
  });
  t.ok(out.extra.prepared?.id, 'the next range asked for');
  t.ok(parsed.length >= 2, `views were made (${parsed.length} parses)`);
  t.equal(new Set(parsed).size, parsed.length, 'no message list parsed twice');
});

t.test("a prepared summary's job counts none of the messages the fit that asked for it counted", async (t) => {
  const counter = new TokenCounter(10_000);
  const compactor = new Compactor(counter, { store: new MemoryStore(), secret: SECRET, summarizer: new ExtractiveSummarizer() });
  const prepared = { entries: [], byDefault: true, settled: async () => false };
  const o = FitOptions.parse({ target_tokens: 2000 });
  const out = await compactor.run(fitStrategy, { messages: tagged(fresh(30)), model: 'gpt-4o' }, o, {
    caller: countingCaller('jobs'),
    prepared,
  });
  const asked = (out.after as { prepare?: PrepareRequest }).prepare;
  if (!asked) throw new Error('the fit asked for no summary');
  const body = asked.body as { messages: unknown[]; model?: string };
  t.equal(body.model, 'gpt-4o', "the job counts as the fit's caller does");
  const preparer = new Preparer(compactor, { concurrency: 1, byDefault: true });
  t.teardown(() => preparer.close(0));
  const before = counter.stats().misses;
  preparer.add('jobs', asked);
  for (let i = 0; i < 1000 && (await preparer.view('jobs', asked.id))?.state !== 'ready'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  t.equal((await preparer.view('jobs', asked.id))?.state, 'ready', 'the job made its summary');
  // What the job wrote (its summary) is new; the range it read came in with the fit's call.
  const missed = counter.stats().misses - before;
  t.ok(missed <= 2, `the job counted ${missed} message(s) anew, of the ${body.messages.length} it read`);
});
