import t from 'tap';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { prepareRequest } from '../../src/service/request-history.js';
import { outsideToolNames, rangeToolNames } from '../../src/strategies/summarize/range.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadCorpus } from '../support/corpus.js';

/**
 * A summary plan is found again by its range's content and the tools its results answer that the
 * content does not say (`outsideToolNames`). Checked against every result's tool
 * (`rangeToolNames`): a result answered inside the range is named by the latest call with its id
 * in the range (what the content says); every other one is listed, with that same tool.
 */
t.test("a range's outside tool names and its content name every result's tool", async (t) => {
  const counter = new TokenCounter(10_000);
  let outside = 0;
  let inside = 0;
  for (const transcript of loadCorpus()) {
    const format = formatByName(transcript.format) as FormatAdapter;
    const h = prepareRequest({ messages: transcript.messages, format: format.name }, counter);
    const n = h.messages.length;
    for (const [from, to] of [
      [0, n],
      [1, n - 1],
      [Math.floor(n / 3), Math.floor((2 * n) / 3)],
      [Math.floor(n / 2), n],
      [2, 5],
    ] as const) {
      if (to <= from) continue;
      const range = Array.from({ length: to - from }, (_, k) => from + k);
      const all = rangeToolNames(h, range);
      const listed = outsideToolNames(h, range);
      const named = new Map<string, string>();
      const expected: string[] = [];
      let k = 0;
      for (const i of range) {
        for (const c of format.callSites(h.messages[i])) named.set(c.id, c.name);
        for (const r of format.resultSites(h.messages[i])) {
          const tool = all[k++] as string;
          const own = named.get(r.callId);
          if (own !== undefined) {
            inside++;
            t.equal(tool, own, `${transcript.file} ${from}-${to}: result at ${i} named by its call in the range`);
          } else {
            outside++;
            expected.push(r.callId, tool);
          }
        }
      }
      t.same(listed, expected, `${transcript.file} ${from}-${to}: the others listed, in order`);
    }
  }
  t.ok(inside > 100 && outside > 10, `both kinds seen (${inside} inside, ${outside} outside)`);
});

t.test('a range with a gap lists every result', async (t) => {
  const counter = new TokenCounter(1000);
  const messages = [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'read', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'a', content: 'x' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'b', type: 'function', function: { name: 'grep', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'b', content: 'y' },
  ];
  const h = prepareRequest({ messages }, counter);
  t.same(outsideToolNames(h, [1, 2, 3, 4]), [], 'consecutive: every call inside');
  t.same(outsideToolNames(h, [2, 3, 4]), ['a', 'read'], "the first result's call lies before");
  t.same(outsideToolNames(h, [1, 2, 4]), rangeToolNames(h, [1, 2, 4]), 'a gap: every result named');
});

t.test(
  'a Responses call that is no call site (apply_patch_call) leaves its output named from before the range: listed',
  async (t) => {
    const counter = new TokenCounter(1000);
    const messages = (tool: string) => [
      { role: 'user', content: 'go' },
      { type: 'function_call', call_id: 'c1', name: tool, arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'x' },
      { role: 'user', content: 'next' },
      { type: 'apply_patch_call', call_id: 'c1', status: 'completed', operation: { type: 'update_file', path: 'a', diff: '' } },
      { type: 'apply_patch_call_output', call_id: 'c1', output: 'done' },
    ];
    for (const tool of ['read_file', 'grep']) {
      const h = prepareRequest({ messages: messages(tool), format: 'openai-responses' }, counter);
      t.same(rangeToolNames(h, [3, 4, 5]), [tool], `${tool}: the output is named by the call before the range`);
      t.same(outsideToolNames(h, [3, 4, 5]), ['c1', tool], `${tool}: so it is listed`);
    }
  },
);
