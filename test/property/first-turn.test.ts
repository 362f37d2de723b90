import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { compactStrategy } from '../../src/strategies/compact.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { windowStrategy } from '../../src/strategies/sliding-window.js';
import { summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { FUTURE_TYPE, type GeneratedHistory, histories, instructedHistories } from '../support/histories.js';

/** A summarizer that writes little: the first user turn must survive whatever it writes. */
class Terse implements Summarizer {
  readonly kind = 'llm' as const;
  async summarize() {
    return {
      text: 'Goal: done.',
      usage: { input_tokens: 10, output_tokens: 3, cached_input_tokens: 0, calls: 1 },
      model: 'terse',
    };
  }
  plan() {
    return { calls: [], model: 'terse' };
  }
}

type Json = Record<string, unknown>;
const json = (v: unknown) => JSON.stringify(v);

/**
 * The first user turn, found on the test's own terms from the wire shapes: the first user message
 * and every message after it up to the first one the model or a tool wrote.
 */
function firstTurn(format: GeneratedHistory['format'], messages: readonly unknown[]): unknown[] {
  const m = messages as Json[];
  const isUser = (x: Json) => (x.type === undefined || x.type === 'message') && x.role === 'user';
  const modelSide = (x: Json): boolean => {
    if (format === 'openai-chat') return x.role === 'assistant' || x.role === 'tool';
    if (format === 'anthropic') return x.role === 'assistant';
    if (format === 'gemini')
      return x.role === 'model' || (Array.isArray(x.parts) && (x.parts as Json[]).some((p) => 'functionResponse' in p));
    const type = typeof x.type === 'string' ? x.type : 'message';
    if (type === 'message') return x.role === 'assistant';
    return !type.startsWith(FUTURE_TYPE);
  };
  const start = m.findIndex(isUser);
  if (start < 0) return [];
  let end = start + 1;
  while (end < m.length && !modelSide(m[end] as Json)) end++;
  return m.slice(start, end);
}

/** A message that is `original` with a summary joined after its content (Anthropic, Gemini: roles alternate). */
function joined(original: unknown, out: unknown): boolean {
  const o = original as Json;
  const x = out as Json;
  const key = 'parts' in o ? 'parts' : 'content';
  const a = o[key];
  const b = x[key];
  if (typeof a === 'string') return typeof b === 'string' ? b.startsWith(a) : Array.isArray(b) && json(b[0]).includes(json(a));
  if (!Array.isArray(a) || !Array.isArray(b) || b.length <= a.length) return false;
  return json(b.slice(0, a.length)) === json(a) && json({ ...o, [key]: null }) === json({ ...x, [key]: null });
}

/**
 * The first user turn is in the output, in order and byte-identical: each of its messages, one of
 * which (the last that is not an instruction) may carry a summary joined after its own content
 * where roles must alternate (docs/strategies.md: the summary joins its neighbour as a text block).
 */
function assertTurnKept(format: GeneratedHistory['format'], input: readonly unknown[], output: readonly unknown[]): void {
  const turn = firstTurn(format, input);
  if (turn.length === 0) return;
  const at = output.findIndex((m) => json(m) === json(turn[0]) || joined(turn[0], m));
  assert.ok(at >= 0, `the first user message is kept: ${json(turn[0]).slice(0, 200)} in ${json(output).slice(0, 1500)}`);
  let hosts = 0;
  turn.forEach((m, k) => {
    const o = output[at + k];
    const host = json(o) !== json(m) && joined(m, o);
    if (host) hosts++;
    assert.ok(
      json(o) === json(m) || host,
      `message ${k} of the first user turn is kept byte-identical: ${json(m).slice(0, 200)}`,
    );
  });
  assert.ok(hosts <= 1, 'one summary at most joins the turn');
}

const keep = fc.oneof(
  fc.record({ runs: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ messages: fc.integer({ min: 0, max: 12 }) }),
  fc.record({ tokens: fc.integer({ min: 0, max: 800 }) }),
);
const strategy = fc.constantFrom('window', 'compact', 'rolling', 'sections', 'fit', 'fit-sections');

async function runOne(compactor: Compactor, kind: string, h: GeneratedHistory, k: Json, target: number) {
  const req = { messages: h.messages, format: h.format, ...(h.system ? { system: h.system } : {}), model: 'gpt-4o' };
  if (kind === 'window') return compactor.run(windowStrategy, req, windowStrategy.options.parse({ keep: k }));
  if (kind === 'compact')
    return compactor.run(
      compactStrategy,
      req,
      compactStrategy.options.parse({ keep_tool_uses: 0, min_tokens: 0, truncate_tokens: 16, clear_tool_inputs: true }),
    );
  if (kind === 'rolling')
    return compactor.run(summarizeStrategy, req, summarizeStrategy.options.parse({ keep: 'tokens' in k ? { messages: 2 } : k }));
  if (kind === 'sections')
    return compactor.run(
      summarizeStrategy,
      req,
      summarizeStrategy.options.parse({
        mode: 'sections',
        keep_sections: 1,
        max_pair_tokens: 64,
        max_section_tokens: 256,
        qa: { max_sections: 2, max_tokens: 256 },
      }),
    );
  const summarize = kind === 'fit-sections' ? { mode: 'sections' as const, max_pair_tokens: 64, max_section_tokens: 256 } : {};
  return compactor.run(
    fitStrategy,
    req,
    FitOptions.parse({ target_tokens: target, min_saving_fraction: 0, summarize, policy: 'tokens' }),
  );
}

for (const [name, arbitraries] of [
  ['plain', histories],
  ['instructed', instructedHistories],
] as const) {
  for (const [format, arbitrary] of Object.entries(arbitraries)) {
    t.test(`${format} (${name}): every strategy keeps the first user turn byte-identical`, async (t) => {
      const compactor = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer: new Terse() });
      await fc.assert(
        fc.asyncProperty(arbitrary, strategy, keep, fc.integer({ min: 0, max: 2000 }), async (h, kind, k, target) => {
          const res = await runOne(compactor, kind, h, k as Json, target);
          assertTurnKept(h.format, h.messages, res.messages);
        }),
        { numRuns: 150 },
      );
      t.pass('property held');
    });
  }
}
