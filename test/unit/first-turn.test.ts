import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FitOptions, fitStrategy } from '../../src/strategies/fit/index.js';
import { windowStrategy } from '../../src/strategies/sliding-window.js';
import { summarizeStrategy } from '../../src/strategies/summarize/index.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';

/**
 * Codex 0.171 with its default model: two developer messages, an `additional_tools` item, the
 * `<environment_context>` user message, an item of a type newer than this release, and the
 * user's request as a second user message; then `exec` calls. The whole first user turn (through
 * the request) survives every strategy byte-identical (issue 37: "Codex loses its task").
 */
const output = (s: number) => `line ${s}\n`.repeat(120);
const HEAD = [
  {
    type: 'message',
    role: 'developer',
    content: [{ type: 'input_text', text: '<permissions instructions>full access</permissions instructions>' }],
  },
  {
    type: 'message',
    role: 'developer',
    content: [{ type: 'input_text', text: '<collaboration_mode>default</collaboration_mode>' }],
  },
  { type: 'additional_tools', tools: [{ type: 'function', name: 'exec', parameters: { type: 'object' } }] },
];
const TURN = [
  {
    type: 'message',
    role: 'user',
    content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/work</cwd>\n</environment_context>' }],
  },
  { type: 'x_future_item', payload: 'kept as it came' },
  {
    type: 'message',
    role: 'user',
    content: [{ type: 'input_text', text: 'Count the lines of every part and report the total.' }],
  },
];
const codex = (steps: number): unknown[] => [
  ...HEAD,
  ...TURN,
  ...Array.from({ length: steps }, (_, s) => [
    { type: 'reasoning', id: `rs_${s}`, summary: [], encrypted_content: `gAAAA${s}` },
    { type: 'function_call', call_id: `call_${s}`, name: 'exec', arguments: JSON.stringify({ cmd: `wc -l part${s}` }) },
    { type: 'function_call_output', call_id: `call_${s}`, output: output(s) },
  ]).flat(),
];

class Down implements Summarizer {
  readonly kind = 'llm' as const;
  async summarize(): Promise<never> {
    throw new CompactorError('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'down');
  }
  plan() {
    return { calls: [], model: 'down' };
  }
}

const json = (v: unknown) => JSON.stringify(v);
const kept = (out: readonly unknown[]) => json(out.slice(0, HEAD.length + TURN.length)) === json([...HEAD, ...TURN]);

t.test('Codex 0.171: window, rolling summary and fit keep the developer messages, the environment and the request', async (t) => {
  const history = codex(20);
  const req = { messages: history, format: 'openai-responses' as const, model: 'gpt-4o' };
  const extractive = new Compactor(new TokenCounter(20_000), { store: new MemoryStore() });
  const window = await extractive.run(windowStrategy, req, windowStrategy.options.parse({ keep: { messages: 3 } }));
  t.equal(window.applied, true);
  t.ok(kept(window.messages), 'window: head and first user turn byte-identical');
  const rolling = await extractive.run(summarizeStrategy, req, summarizeStrategy.options.parse({ keep: { messages: 3 } }));
  t.equal(rolling.applied, true);
  t.ok(kept(rolling.messages), 'rolling summary: the summary comes after the request');
  t.match(json(rolling.messages[HEAD.length + TURN.length]), /\[compactor:summary art_/);
  const down = new Compactor(new TokenCounter(20_000), { store: new MemoryStore(), summarizer: new Down() });
  const options = FitOptions.parse({
    target_tokens: 1500,
    min_saving_fraction: 0,
    policy: 'tokens',
    compact: { min_tokens: 100_000 },
  });
  const fit = await down.run(fitStrategy, req, options);
  t.ok(kept(fit.messages), 'fit, its window standing in for a failed summary: the task is there');
  const marker = json(fit.messages[HEAD.length + TURN.length]);
  t.match(
    marker,
    /\[compactor:window art_[0-9a-f]{24} own covers=\d+ mac=[0-9a-f]{16}\] \(the messages it replaces are stored as art_/,
    'and a marker says what was removed',
  );
  t.notMatch(json(fit.messages), /call the `/, 'no tool named: the request offers no recall tool');
  const back = await down.expand({ messages: fit.messages, format: 'openai-responses' });
  t.equal(json(back.messages), json(history), 'expand restores the removed range byte-exact');
  const withTool = await down.run(
    fitStrategy,
    { ...req, tools: [{ type: 'function', name: 'compactor__recall', parameters: {} }] },
    options,
  );
  t.match(
    json(withTool.messages),
    /call the `compactor__recall` tool with art_/,
    "with Codex's MCP tool offered, the hint names it",
  );
});
