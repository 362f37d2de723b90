import { createHmac } from 'node:crypto';
import t from 'tap';
import { parseArgs } from '../../src/formats/shared.js';
import { addresser, sha256Hex } from '../../src/history/address.js';
import { markers, placeholderMarker } from '../../src/history/markers.js';
import { Compactor } from '../../src/service/compactor.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { KeptArtifacts, NewArtifact } from '../../src/store/types.js';
import { compactStrategy } from '../../src/strategies/compact.js';
import { CompactOptions } from '../../src/strategies/compact-options.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { DerivedCache, derived, MAX_KEY_CHARS } from '../../src/tokens/derived.js';

t.test('a derived value is computed once, found after, and bounded by bytes', async (t) => {
  const cache = new DerivedCache(4096);
  let made = 0;
  const make = () => {
    made++;
    return 'v';
  };
  t.equal(cache.get('k', make), 'v');
  t.equal(cache.get('k', make), 'v');
  t.equal(made, 1, 'the second get is a hit');
  t.match(cache.stats(), { hits: 1, misses: 1 });
  for (let i = 0; i < 200; i++) cache.get(`key-${i}`, make);
  t.ok(cache.stats().bytes <= 4096, 'never more bytes than the bound');
  made = 0;
  cache.get('k', make);
  t.equal(made, 1, 'the oldest entry was evicted');
  const long = 'x'.repeat(MAX_KEY_CHARS + 1);
  made = 0;
  cache.get(long, make);
  cache.get(long, make);
  t.equal(made, 2, 'a key longer than V8 hashes in full is never kept');
  const off = new DerivedCache(0);
  made = 0;
  off.get('k', make);
  off.get('k', make);
  t.equal(made, 2, '0 bytes: every value computed');
});

t.test('cached ids and MACs stay the caller’s own', async (t) => {
  const json = JSON.stringify({ content: 'the same original for both callers' });
  const expected = (scope: string) => {
    const key = createHmac('sha256', 'secret').update(`compactor-artifact-id\0${scope}`).digest();
    return `art_${createHmac('sha256', key).update(sha256Hex(json)).digest('hex').slice(0, 24)}`;
  };
  for (let round = 0; round < 2; round++) {
    const a = addresser('secret', 'scope-a')(json);
    const b = addresser('secret', 'scope-b')(json);
    t.equal(a.id, expected('scope-a'), `round ${round}: scope a's id as computed without a cache`);
    t.equal(b.id, expected('scope-b'), `round ${round}: scope b's id as computed without a cache`);
    t.not(a.id, addresser('other-secret', 'scope-a')(json).id, 'another secret, another id');
    t.equal(a.sha256, sha256Hex(json));
  }
  const text = `output ${placeholderMarker('art_0123456789abcdef01234567')}`;
  const signedA = markers('secret', 'scope-a').placeholder('result', 'b1', 'art_0123456789abcdef01234567', text);
  for (let round = 0; round < 2; round++) {
    t.ok(markers('secret', 'scope-a').readPlaceholder('result', 'b1', signedA), `round ${round}: verifies for its caller`);
    t.notOk(markers('secret', 'scope-b').readPlaceholder('result', 'b1', signedA), `round ${round}: never for another`);
    t.notOk(markers('other', 'scope-a').readPlaceholder('result', 'b1', signedA), `round ${round}: nor under another secret`);
  }
});

/** A store that counts the originals it is asked to write. */
class CountingStore extends MemoryStore {
  written = 0;
  override async put(
    scope: string,
    artifacts: readonly NewArtifact[],
    ttlSeconds: number,
    now: number,
    kept?: KeptArtifacts,
  ): Promise<readonly string[] | undefined> {
    this.written += artifacts.length;
    return super.put(scope, artifacts, ttlSeconds, now, kept);
  }
}

/** A conversation of tool calls and results, each small enough for its digests to be kept. */
function history(calls: number): unknown[] {
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the failing test in src/app.ts.' },
  ];
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: `cat file${i}.ts` }) } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: `line ${i}: ${'const value = compute(input);\n'.repeat(60)}` });
  }
  return messages;
}

t.test('a second call with the same prefix re-hashes and re-stores nothing of it', async (t) => {
  const store = new CountingStore();
  const compactor = new Compactor(new TokenCounter(1000), { store, secret: 'derived-test-secret-0123456789' });
  const o = CompactOptions.parse({ keep_tool_uses: 2, min_tokens: 10 });
  const fresh = (n: number) => JSON.parse(JSON.stringify(history(n))) as unknown[];
  const first = await compactor.run(compactStrategy, { messages: fresh(20), model: 'gpt-4o' }, o);
  t.ok(store.written >= 10, 'the first call stores the originals it offloads');
  const written = store.written;
  const misses = derived.stats().misses;
  const second = await compactor.run(compactStrategy, { messages: fresh(20), model: 'gpt-4o' }, o);
  t.same(second.messages, first.messages, 'the same answer');
  t.equal(store.written, written, 'no original written again');
  // A long text's digest is computed each time (cheaper than finding it: `LOOKUP_MAX_CHARS`); ids and short texts' MACs are found.
  t.equal(derived.stats().misses, misses, 'no id, argument digest or MAC computed again');
  // The conversation grows by one call: only what is new is hashed and stored.
  const grown = await compactor.run(compactStrategy, { messages: fresh(21), model: 'gpt-4o' }, o);
  t.ok(grown.messages.length > 0);
  t.ok(store.written - written <= 2, `one or two new originals stored (${store.written - written})`);
  t.ok(derived.stats().misses - misses <= 12, `a few new values computed (${derived.stats().misses - misses})`);
});

t.test('tool-call arguments are parsed once per text, and frozen', async (t) => {
  const text = JSON.stringify({ command: 'ls -la', nested: { paths: ['a', 'b'] } });
  const first = parseArgs(text);
  const again = parseArgs(`${text}`);
  t.same(first, { command: 'ls -la', nested: { paths: ['a', 'b'] } });
  t.equal(again, first, 'the same text: the value parsed before');
  t.ok(first && Object.isFrozen(first) && Object.isFrozen(first.nested), 'frozen all the way down');
  t.throws(() => {
    (first as Record<string, unknown>).command = 'rm -rf /';
  }, TypeError);
  t.equal(parseArgs('[1, 2]'), undefined, 'not an object');
  t.equal(parseArgs('[1, 2]'), undefined, 'not an object, from the cache');
  t.equal(parseArgs('{broken'), undefined);
  t.equal(parseArgs(42), undefined);
});
