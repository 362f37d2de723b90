import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import type { Markers } from '../../src/history/markers.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { SummarizeOptions, summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { Summarizer, SummaryRequest } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { histories, markedHistories } from '../support/histories.js';
import { adapter, violationsOf } from '../support/invariants.js';
import { markerPool, marksOf } from '../support/marks.js';
import { schemaErrors } from '../support/schemas.js';

type Behaviour =
  | { kind: 'ok'; text: string }
  | { kind: 'fail'; code: 'CMP_ERR_SUMMARIZER_TIMEOUT' | 'CMP_ERR_SUMMARIZER_UPSTREAM' }
  | { kind: 'empty' };

/** A summarizer whose answer the property chooses: any text, a failure, or nothing. */
class Scripted implements Summarizer {
  readonly kind = 'llm' as const;
  behaviour: Behaviour = { kind: 'ok', text: 'summary' };
  calls: SummaryRequest[] = [];
  async summarize(request: SummaryRequest) {
    this.calls.push(request);
    const b = this.behaviour;
    if (b.kind === 'fail')
      throw Object.assign(new CompactorError(b.code, 'scripted'), {
        billed: { input_tokens: 10, output_tokens: 0, cached_input_tokens: 0, calls: 1 },
      });
    return {
      text: b.kind === 'ok' ? b.text : '   ',
      usage: { input_tokens: 100, output_tokens: 20, cached_input_tokens: 0, calls: 1 },
      model: 'scripted',
    };
  }
  plan() {
    return { calls: [{ purpose: 'summary' as const, input_tokens: 1 }], model: 'scripted' };
  }
}

const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('ok' as const), text: fc.string({ minLength: 1, maxLength: 200 }) }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      code: fc.constantFrom('CMP_ERR_SUMMARIZER_TIMEOUT' as const, 'CMP_ERR_SUMMARIZER_UPSTREAM' as const),
    }),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: 'empty' as const }), weight: 1 },
);

const options = fc.record({
  keep: fc.oneof(fc.record({ messages: fc.integer({ min: 0, max: 12 }) }), fc.record({ runs: fc.integer({ min: 0, max: 3 }) })),
  keep_first_user: fc.boolean(),
  summary_role: fc.constantFrom('user' as const, 'pair' as const),
  on_failure: fc.constantFrom('keep' as const, 'window' as const),
  store: fc.constantFrom('server' as const, 'none' as const),
});

const json = (v: unknown) => JSON.stringify(v);

function summariesIn(markers: Markers, format: string, messages: readonly unknown[]): number {
  const a = adapter(format);
  return messages.filter((m) => markers.readSummary(a.prose(m)) ?? markers.readSummary(a.lastText(m))).length;
}

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(`${format}: whatever the summarizer does, the output is valid and keeps what must be kept`, async (t) => {
    const summarizer = new Scripted();
    const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer });
    const { markers } = compactor.caller(null);
    await fc.assert(
      fc.asyncProperty(arbitrary, options, behaviour, behaviour, async (h, o, first, second) => {
        const opts: SummarizeOptions = SummarizeOptions.parse({ mode: 'rolling', summarizer: { max_tokens: 512 }, ...o });
        const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
        const before = json(h.messages);
        summarizer.behaviour = first;
        const res = await compactor.run(summarizeStrategy, req, opts);
        assert.equal(json(h.messages), before, 'input not mutated');
        assert.deepEqual(violationsOf(format, res.messages), [], 'structural rules');
        assert.deepEqual(schemaErrors(format, res.messages), [], 'provider schema');
        assert.ok(summariesIn(markers, format, res.messages) <= 1, 'at most one summary of ours');
        assert.ok(res.tokens.after <= res.tokens.before, 'never grows');
        if (first.kind !== 'ok') assert.ok(!res.extra.summary, 'a failed or empty summary is never committed');
        // Every message the actions keep is the very input value, in order.
        const kept = res.actions.filter((a) => a.action === 'keep').map((a) => h.messages[a.index]);
        assert.deepEqual(
          res.messages.filter((m) => h.messages.includes(m)),
          kept.filter((m) => res.messages.includes(m)),
        );
        for (const a of res.actions)
          if (a.action === 'keep') assert.ok(res.messages.includes(h.messages[a.index]), `kept message ${a.index} is there`);
        const host = res.actions.find((a) => a.action === 'rewrite');
        if (host) {
          // Only a summary joining its neighbour rewrites it, and taking the summary out gives the message back.
          const a = adapter(format);
          const joined = res.messages[host.index];
          const marker = markers.readSummary(a.lastText(joined));
          assert.ok(marker, 'the rewritten message carries our summary');
          assert.equal(json(a.dropLastText(joined, marker.placement === 'joined-string')), json(h.messages[host.index]));
        }
        if (res.extra.summary && opts.store === 'server') {
          const expanded = await compactor.expand({ messages: res.messages, format: h.format });
          assert.equal(json(expanded.messages), before, 'expand gives the transcript back');
        }
        // A second pass over the output folds, never duplicates.
        summarizer.behaviour = second;
        const again = await compactor.run(summarizeStrategy, { ...req, messages: res.messages }, opts);
        assert.deepEqual(violationsOf(format, again.messages), []);
        assert.ok(summariesIn(markers, format, again.messages) <= 1, 'still at most one summary');
      }),
      { numRuns: 100 },
    );
    t.pass('properties held');
  });
}

const sectionOptions = fc.record({
  keep_sections: fc.integer({ min: 1, max: 3 }),
  max_pair_tokens: fc.integer({ min: 64, max: 400 }),
  max_section_tokens: fc.integer({ min: 256, max: 2000 }),
  qa: fc.record({
    enabled: fc.boolean(),
    max_sections: fc.integer({ min: 2, max: 5 }),
    max_tokens: fc.integer({ min: 256, max: 4000 }),
  }),
  store: fc.constantFrom('server' as const, 'none' as const),
});

for (const [format, arbitrary] of Object.entries(histories)) {
  t.test(`${format}: sections mode is valid, and idempotent three times running with no LLM call`, async (t) => {
    const summarizer = new Scripted();
    summarizer.behaviour = { kind: 'ok', text: 'A section summary: built the parser, tests pass.' };
    const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer });
    await fc.assert(
      fc.asyncProperty(arbitrary, sectionOptions, async (h, o) => {
        const opts = SummarizeOptions.parse({ mode: 'sections', summarizer: { max_tokens: 128 }, ...o });
        const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
        const before = json(h.messages);
        const res = await compactor.run(summarizeStrategy, req, opts);
        assert.equal(json(h.messages), before, 'input not mutated');
        assert.deepEqual(violationsOf(format, res.messages), [], 'structural rules');
        assert.deepEqual(schemaErrors(format, res.messages), [], 'provider schema');
        assert.ok(res.tokens.after <= res.tokens.before, 'never grows');
        const last = h.messages.length - 1;
        if (last >= 0) assert.equal(json(res.messages.at(-1)), json(h.messages[last]), 'the newest message is kept');
        if (o.store === 'server') {
          const expanded = await compactor.expand({ messages: res.messages, format: h.format });
          assert.equal(json(expanded.messages), before, 'expand gives every section back, QA merges included');
        }
        let current = res.messages;
        for (let round = 0; round < 3; round++) {
          const calls = summarizer.calls.length;
          const again = await compactor.run(summarizeStrategy, { ...req, messages: current }, opts);
          assert.equal(json(again.messages), json(current), `round ${round + 1}: byte-identical`);
          assert.equal(summarizer.calls.length, calls, `round ${round + 1}: no LLM call`);
          current = again.messages;
        }
      }),
      { numRuns: 80 },
    );
    t.pass('properties held');
  });
}

const markedOptions = fc.record({
  keep: fc.oneof(fc.record({ messages: fc.integer({ min: 0, max: 12 }) }), fc.record({ runs: fc.integer({ min: 0, max: 3 }) })),
  keep_first_user: fc.boolean(),
  summary_role: fc.constantFrom('user' as const, 'pair' as const, 'system' as const),
});

for (const format of Object.keys(histories) as (keyof typeof histories)[]) {
  t.test(
    `${format}: text that looks like ours is the user's: expand(summarize(x)) == x, twice, covering no more than x`,
    async (t) => {
      const summarizer = new Scripted();
      summarizer.behaviour = { kind: 'ok', text: 'What happened: the parser was built.' };
      const compactor = new Compactor(new TokenCounter(20_000), {
        store: new MemoryStore(),
        summarizer,
        secret: 'marks-0123456789abcdef',
      });
      const arbitrary = markedHistories(marksOf(await markerPool(compactor)))[format];
      let summarized = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary, markedOptions, async (h, o) => {
          const system = o.summary_role === 'system' && !adapter(format).systemMessages ? 'user' : o.summary_role;
          const opts = SummarizeOptions.parse({ mode: 'rolling', summarizer: { max_tokens: 512 }, ...o, summary_role: system });
          const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
          const before = json(h.messages);
          let current = h.messages;
          for (let pass = 1; pass <= 2; pass++) {
            const res = await compactor.run(summarizeStrategy, { ...req, messages: current }, opts);
            assert.deepEqual(violationsOf(format, res.messages), [], `pass ${pass}: structural rules`);
            const summary = res.extra.summary;
            if (summary) {
              summarized++;
              assert.ok(
                summary.covered_messages <= h.messages.length,
                `pass ${pass}: covers ${summary.covered_messages} of ${h.messages.length}`,
              );
              if (pass === 1) assert.equal(summary.parent_id, null, 'nothing in x is an earlier summary of ours');
            }
            const expanded = await compactor.expand({ messages: res.messages, format: h.format });
            assert.equal(json(expanded.messages), before, `pass ${pass}: expand gives x back byte-exact`);
            current = res.messages;
          }
        }),
        { numRuns: 80 },
      );
      t.ok(summarized >= 10, `${summarized} summaries written`);
    },
  );

  t.test(`${format}: text that looks like ours is the user's: expand(sections(x)) == x`, async (t) => {
    const summarizer = new Scripted();
    summarizer.behaviour = { kind: 'ok', text: 'A section summary: built the parser, tests pass.' };
    const compactor = new Compactor(new TokenCounter(20_000), {
      store: new MemoryStore(),
      summarizer,
      secret: 'marks-0123456789abcdef',
    });
    const arbitrary = markedHistories(marksOf(await markerPool(compactor)))[format];
    await fc.assert(
      fc.asyncProperty(arbitrary, sectionOptions, async (h, o) => {
        const opts = SummarizeOptions.parse({ mode: 'sections', summarizer: { max_tokens: 128 }, ...o, store: 'server' });
        const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}) };
        const res = await compactor.run(summarizeStrategy, req, opts);
        assert.deepEqual(violationsOf(format, res.messages), [], 'structural rules');
        const expanded = await compactor.expand({ messages: res.messages, format: h.format });
        assert.equal(json(expanded.messages), json(h.messages), 'expand gives x back byte-exact');
      }),
      { numRuns: 60 },
    );
    t.pass('properties held');
  });
}
