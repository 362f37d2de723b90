import t from 'tap';
import { formatByName } from '../../src/formats/registry.js';
import { bindings } from '../../src/history/bindings.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { parseJsonBytes } from '../../src/service/request-body.js';
import { bodyTagOf } from '../../src/tokens/content-tag.js';
import { loadCorpus } from '../support/corpus.js';

/** Every call and result binding of a history, by index and slot, in order. */
function all(format: FormatAdapter, messages: unknown[]): string[] {
  const bound = bindings(format, messages);
  const out: string[] = [];
  messages.forEach((message, index) => {
    for (const c of format.callSites(message)) out.push(`call ${index}:${c.slot} ${bound.call(index, c.slot)}`);
    for (const r of format.resultSites(message)) {
      out.push(`result ${index}:${r.slot} ${bound.result(index, r.slot)} signed=${bound.signed(index, r.slot)}`);
    }
  });
  return out;
}

/** The messages as a request body brings them: tagged by their bytes (`content-tag.ts`). */
const tagged = (messages: unknown[]) =>
  (parseJsonBytes(Buffer.from(JSON.stringify({ messages }))) as { messages: unknown[] }).messages;

t.test('bindings of tagged messages (found by their tags the second time) are those of the same messages untagged', async (t) => {
  for (const transcript of loadCorpus()) {
    const format = formatByName(transcript.format) as FormatAdapter;
    const plain = structuredClone(transcript.messages);
    const expected = all(format, plain);
    const first = tagged(transcript.messages);
    t.ok(
      first.every((m) => bodyTagOf(m) !== undefined),
      `${transcript.file}: tagged`,
    );
    t.same(all(format, first), expected, `${transcript.file}: first call`);
    t.same(all(format, tagged(transcript.messages)), expected, `${transcript.file}: again, from the cache`);
  }
});

t.test('a call repeated exactly (the same tag twice) is ranked once per occurrence; an orphan result too', async (t) => {
  const format = formatByName('openai-chat') as FormatAdapter;
  const call = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a.py"}' } }],
  };
  const result = { role: 'tool', tool_call_id: 'c1', content: 'x = 1' };
  const orphan = { role: 'tool', tool_call_id: 'zz', content: '[compactor:cleared mac=0123456789abcdef] lost' };
  const messages = [{ role: 'user', content: 'go' }, call, result, call, result, orphan, orphan];
  const expected = all(format, structuredClone(messages));
  t.equal(new Set(expected.map((b) => b.split(' ')[2])).size, 4, 'two calls, two orphans: four bindings');
  t.same(
    expected.filter((b) => b.endsWith('signed=true')).map((b) => b.split(' ')[1]),
    ['5:-1', '6:-1'],
    'the results holding a signed-looking marker are the ones that may be signed',
  );
  t.same(all(format, tagged(messages)), expected, 'tagged');
  t.same(all(format, tagged(messages)), expected, 'tagged again');
});

t.test('Responses and Gemini histories: repeats, orphans, calls without ids, tagged and cached alike', async (t) => {
  const responsesCall = { type: 'function_call', call_id: 'c1', name: 'read', arguments: '{"path":"a.py"}' };
  const responsesOut = { type: 'function_call_output', call_id: 'c1', output: 'x = 1' };
  const custom = { type: 'custom_tool_call', call_id: 'k1', name: 'apply_patch', input: '*** Begin Patch' };
  const customOut = { type: 'custom_tool_call_output', call_id: 'k1', output: 'done' };
  const lost = { type: 'function_call_output', call_id: 'zz', output: 'lost' };
  const geminiCall = { role: 'model', parts: [{ functionCall: { name: 'read', args: { path: 'a.py' } } }] };
  const geminiOut = { role: 'user', parts: [{ functionResponse: { name: 'read', response: { text: 'x = 1' } } }] };
  const withIds = {
    role: 'model',
    parts: [{ functionCall: { id: 'f1', name: 'ls', args: {} } }, { functionCall: { id: 'f2', name: 'ls', args: {} } }],
  };
  const withIdsOut = {
    role: 'user',
    parts: [
      { functionResponse: { id: 'f1', name: 'ls', response: {} } },
      { functionResponse: { id: 'f2', name: 'ls', response: {} } },
    ],
  };
  const cases: [string, unknown[]][] = [
    [
      'openai-responses',
      [{ role: 'user', content: 'go' }, responsesCall, responsesOut, responsesCall, responsesOut, custom, customOut, lost, lost],
    ],
    ['gemini', [{ role: 'user', parts: [{ text: 'go' }] }, geminiCall, geminiOut, geminiCall, geminiOut, withIds, withIdsOut]],
  ];
  // The same bytes read by two formats: each finds its own sites, not the other's.
  const chat = formatByName('openai-chat') as FormatAdapter;
  const chatCall = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c9', type: 'function', function: { name: 'read', arguments: '{}' } }],
  };
  t.equal(all(chat, tagged([chatCall])).length, 1, 'a Chat Completions call, bound (and cached) as Chat');
  const responses = formatByName('openai-responses') as FormatAdapter;
  t.equal(bindings(responses, tagged([chatCall])).call(0, 0), undefined, 'the same bytes as Responses: no call of its reading');
  for (const [name, messages] of cases) {
    const format = formatByName(name) as FormatAdapter;
    t.same(format.parse(structuredClone(messages)).warnings, [], `${name}: a history the format reads without warnings`);
    const expected = all(format, structuredClone(messages));
    t.ok(expected.length >= 8, `${name}: ${expected.length} sites bound`);
    t.same(all(format, tagged(messages)), expected, `${name}: tagged`);
    t.same(all(format, tagged(messages)), expected, `${name}: tagged again, from the cache`);
  }
});
