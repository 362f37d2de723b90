import { hash } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { addresser } from '../../src/history/address.js';
import { Compactor } from '../../src/service/compactor.js';
import { parseJsonBody as parseText } from '../../src/service/request-body.js';

const parseJsonBody = (text: string) => parseText(text, Buffer.from(text));

import { MemoryStore } from '../../src/store/memory.js';
import { compactStrategy } from '../../src/strategies/compact.js';
import { CompactOptions } from '../../src/strategies/compact-options.js';
import { tagOf, tagStats } from '../../src/tokens/content-tag.js';
import { TokenCounter } from '../../src/tokens/counter.js';

const sha = (text: string) => hash('sha256', text, 'base64');

t.test('each message is tagged by the SHA-256 of its bytes as sent', async (t) => {
  const text = `{ "model": "gpt-4o",\n  "messages" : [ {"role":"user","content":"say \\"hi\\" \\\\"} ,\n {"role":"assistant","content":"[}{]"}\t],"x":[1,2]}`;
  const body = parseJsonBody(text) as { messages: object[] };
  t.equal(tagOf(body.messages[0]), sha('{"role":"user","content":"say \\"hi\\" \\\\"}'));
  t.equal(tagOf(body.messages[1]), sha('{"role":"assistant","content":"[}{]"}'));
  const responses = parseJsonBody('{"input":[{"type":"message","role":"user","content":"a"}]}') as { input: object[] };
  t.equal(tagOf(responses.input[0]), sha('{"type":"message","role":"user","content":"a"}'), 'Responses input');
  const other = parseJsonBody('{"messages":[{"role":"user","content":"say \\"hi\\" \\\\"}]}') as { messages: object[] };
  t.equal(tagOf(other.messages[0]), tagOf(body.messages[0]), 'the same bytes in another body: the same tag');
  t.equal(tagOf({ role: 'user' }), undefined, 'a message not parsed from a body has none');
});

t.test('a body that could be read two ways is not tagged', async (t) => {
  // JSON.parse keeps the last of two keys; an escaped key may spell `messages`.
  const twice = parseJsonBody('{"messages":[{"a":1}],"messages":[{"b":2}]}') as { messages: object[] };
  t.same(twice.messages, [{ b: 2 }]);
  t.equal(tagOf(twice.messages[0]), undefined, 'a history key given twice');
  const escaped = parseJsonBody('{"messages":[{"a":1}],"m\\u0065ssages":[{"b":2}]}') as { messages: object[] };
  t.same(escaped.messages, [{ b: 2 }]);
  t.equal(tagOf(escaped.messages[0]), undefined, 'an escaped top-level key');
  const notArray = parseJsonBody('{"messages":{"role":"user"}}') as { messages: object };
  t.equal(tagOf(notArray.messages), undefined);
  const scalars = parseJsonBody('{"messages":["plain", 1, null, {"role":"user","content":"x"}]}') as { messages: unknown[] };
  t.equal(tagOf(scalars.messages[3]), sha('{"role":"user","content":"x"}'), 'objects among scalars are tagged');
});

t.test('property: every item of any history is tagged by exactly its own bytes', async () => {
  const item = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
  fc.assert(
    fc.property(fc.array(item, { maxLength: 8 }), fc.boolean(), fc.jsonValue({ maxDepth: 2 }), (items, pretty, other) => {
      const body = { other, messages: items };
      const text = pretty ? JSON.stringify(body, null, 2) : JSON.stringify(body);
      fc.pre(!/__proto__|constructor/.test(text)); // refused bodies (a 400), not tagged
      const parsed = parseJsonBody(text) as { messages: object[] };
      parsed.messages.forEach((m, k) => {
        const own = pretty ? JSON.stringify(items[k], null, 2).replace(/\n/g, '\n    ') : JSON.stringify(items[k]);
        if (tagOf(m) !== sha(own)) throw new Error(`item ${k}: ${tagOf(m)} against ${sha(own)}`);
      });
    }),
  );
});

t.test('a second call with the same prefix stringifies no original of it, and answers the same', async (t) => {
  const messages: unknown[] = [{ role: 'user', content: 'Fix the failing test.' }];
  for (let i = 0; i < 12; i++) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"command":"cat f${i}"}` } }],
    });
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: `out ${i} ${'const x = compute(y);\n'.repeat(80)}` });
  }
  const text = JSON.stringify({ messages });
  const address = addresser('tag-test-secret-0123456789abcdef', 'shared');
  let stringified = 0;
  let named = 0;
  const counting = Object.assign(
    (json: string) => {
      stringified++;
      return address(json);
    },
    {
      ofDigest: (sha256: string) => {
        named++;
        return address.ofDigest(sha256);
      },
      keyName: address.keyName,
    },
  );
  const compactor = new Compactor(new TokenCounter(1000), {
    store: new MemoryStore(),
    secret: 'tag-test-secret-0123456789abcdef',
  });
  const caller = { scope: 'shared', address: counting, markers: compactor.caller(null).markers };
  const o = CompactOptions.parse({ keep_tool_uses: 2, min_tokens: 10 });
  const run = () =>
    compactor.run(compactStrategy, { messages: (parseJsonBody(text) as { messages: unknown[] }).messages, model: 'gpt-4o' }, o, {
      caller,
    });
  const first = await run();
  t.ok(named >= 10, `the first call names each cleared original by its tag (${named})`);
  t.equal(stringified, 0, 'and hashes each by its tag, not by a second JSON');
  const namedFirst = named;
  t.same(await run(), first, 'a second call: the same answer');
  t.equal(named, namedFirst, 'its originals found by their tags: none named again');
  const untagged = await compactor.run(compactStrategy, { messages: JSON.parse(text).messages, model: 'gpt-4o' }, o, { caller });
  t.ok(stringified >= 10, 'messages not parsed from a body are stringified and hashed');
  t.same(untagged.messages, first.messages, 'tagged or not: the same answer');
  t.same(untagged, first, 'the same response: actions, artifacts, ids and digests');
});

t.test('a grown history hashes only its new messages; a changed one is hashed from the change', async (t) => {
  const messages: unknown[] = [{ role: 'system', content: `You are agent ${Math.random()}.` }];
  for (let i = 0; i < 30; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} ${'words '.repeat(50)}` });
  const body = (m: unknown[]) => JSON.stringify({ model: 'gpt-4o', messages: m, target_tokens: 1000 });
  const first = parseJsonBody(body(messages)) as { messages: object[] };
  const before = tagStats();
  const grown = parseJsonBody(
    body([...messages, { role: 'user', content: 'one more' }, { role: 'assistant', content: 'ok' }]),
  ) as {
    messages: object[];
  };
  const after = tagStats();
  t.equal(after.hashed - before.hashed, 3, 'the first message (to find the earlier history) and the two new ones');
  t.equal(after.reused - before.reused, 30, 'the other 30 take the tags they had');
  grown.messages.slice(0, 31).forEach((m, k) => {
    t.equal(tagOf(m), tagOf(first.messages[k]), `message ${k}: the same tag`);
  });
  t.equal(tagOf(grown.messages[32]), sha('{"role":"assistant","content":"ok"}'));
  // A message changed in the middle: those before it keep their tags, it and those after are hashed.
  const changed = [...messages];
  changed[10] = { role: 'user', content: 'changed' };
  const edited = parseJsonBody(body(changed)) as { messages: object[] };
  const last = tagStats();
  t.equal(last.reused - after.reused, 9, 'messages 1-9 reused');
  t.equal(tagOf(edited.messages[10]), sha('{"role":"user","content":"changed"}'));
  t.equal(tagOf(edited.messages[20]), tagOf(first.messages[20]), 'an unchanged later message: its own bytes, the same tag');
});

t.test('property: after any earlier history, every item is tagged by exactly its own bytes', async (t) => {
  const before = tagStats().reused;
  const item = fc.oneof(
    fc.dictionary(fc.constantFrom('role', 'content', 'x'), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 }),
    fc.constant(7),
  );
  const first = { role: 'system', content: `property ${Math.random()}` };
  const step = fc.tuple(fc.nat({ max: 8 }), fc.array(item, { maxLength: 2 }), fc.boolean());
  fc.assert(
    fc.property(fc.array(item, { maxLength: 8 }), fc.array(step, { minLength: 1, maxLength: 5 }), (base, steps) => {
      // Each body a prefix of one conversation, grown or cut, some pretty-printed: the earlier ones are found.
      for (const [cut, extra, pretty] of steps) {
        const items = [first, ...base.slice(0, cut), ...extra];
        const text = pretty ? JSON.stringify({ messages: items }, null, 1) : JSON.stringify({ messages: items, n: 1 });
        if (/__proto__|constructor/.test(text)) continue; // refused bodies (a 400), not tagged
        const parsed = parseJsonBody(text) as { messages: unknown[] };
        parsed.messages.forEach((m, k) => {
          const own = pretty ? JSON.stringify(items[k], null, 1).replace(/\n/g, '\n  ') : JSON.stringify(items[k]);
          const expected = typeof m === 'object' && m !== null ? sha(own) : undefined;
          if (tagOf(m) !== expected) throw new Error(`item ${k}: ${tagOf(m)} against ${expected}`);
        });
      }
    }),
    { numRuns: 300 },
  );
  t.ok(tagStats().reused > before, `tags were taken from earlier histories (${tagStats().reused - before})`);
});
