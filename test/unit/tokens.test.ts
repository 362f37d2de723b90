import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { checkDepth, MAX_DEPTH } from '../../src/history/limits.js';
import { parseJsonBytes } from '../../src/service/request-body.js';
import { parseHistory } from '../../src/service/request-history.js';
import { bodyTagOf } from '../../src/tokens/content-tag.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { countText, MERGE_CACHE_CLEAR_AT, mergeCacheSize } from '../../src/tokens/encoders.js';
import { resolveModel } from '../../src/tokens/models.js';
import { occupancyFromUsage, reportedTotal } from '../../src/tokens/occupancy.js';
import { loadCorpus } from '../support/corpus.js';
import { encoding } from '../support/tokenizer.js';

const { countTokens } = encoding('o200k_base');
const { countTokens: countCl100k } = encoding('cl100k_base');

const adapterOf = (name: string) => formatByName(name) as FormatAdapter;
const anthropic = adapterOf('anthropic');
const openaiChat = adapterOf('openai-chat');

t.test('model table', async (t) => {
  t.match(resolveModel('gpt-4o-2024-08-06'), { encoding: 'o200k_base', exact: true, contextWindow: 128_000 });
  t.match(resolveModel('openai/gpt-4.1-mini'), { encoding: 'o200k_base', exact: true, contextWindow: 1_047_576 });
  t.match(resolveModel('gpt-4'), { encoding: 'cl100k_base', exact: true, contextWindow: 8192 });
  t.match(resolveModel('gpt-3.5-turbo-0125'), { encoding: 'cl100k_base', exact: true });
  t.match(resolveModel('claude-opus-4-5-20251101'), { exact: false, factor: 1.2, contextWindow: 200_000 });
  t.match(resolveModel('gemini-2.5-pro'), { exact: false, contextWindow: 1_048_576 });
  t.match(resolveModel(undefined), { exact: false, contextWindow: undefined });
  t.equal(resolveModel('mystery', 32_000).contextWindow, 32_000, 'context_window overrides');
});

t.test('text counting matches gpt-tokenizer; special tokens count as text', async (t) => {
  const text = 'def f(x):\n    return x <|endoftext|> café 日本語';
  const exact = resolveModel('gpt-4o');
  t.equal(countText(exact, text), countTokens(text, { disallowedSpecial: new Set() }));
  const estimate = resolveModel('claude-sonnet-4');
  t.equal(countText(estimate, text), Math.ceil(countText(exact, text) * 1.2));
  t.equal(countText(exact, ''), 0);
});

/** Every string in a JSON value: message contents, parts, tool-call arguments. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) strings(v, out);
  return out;
}

t.test('ordinary text is counted exactly: every string of the real corpus, both encodings', async (t) => {
  const asText = { disallowedSpecial: new Set<string>() };
  const o200k = resolveModel('gpt-4o');
  const cl100k = resolveModel('gpt-4');
  let checked = 0;
  let guarded = 0;
  for (const transcript of loadCorpus()) {
    for (const text of strings(transcript.messages)) {
      if (text.length === 0) continue;
      // Texts long enough for the long-run guard to look at are the ones that matter here.
      if (text.length >= 512) guarded++;
      if (countText(o200k, text) !== countTokens(text, asText)) t.fail(`${transcript.file}: o200k_base count differs`);
      if (countText(cl100k, text) !== countCl100k(text, asText)) t.fail(`${transcript.file}: cl100k_base count differs`);
      checked++;
    }
  }
  t.ok(
    checked > 1000 && guarded > 100,
    `${checked} texts (${guarded} of 512 characters or more) counted as gpt-tokenizer counts them`,
  );
});

t.test('pathological runs are counted in pieces, close to the exact count', async (t) => {
  const o200k = resolveModel('gpt-4o');
  const cl100k = resolveModel('gpt-4');
  // 8 K characters: small enough for the exact (quadratic) count to finish quickly.
  const runs = [
    'a'.repeat(8192),
    '—.'.repeat(4096),
    '😀.'.repeat(2731),
    '\u0301.'.repeat(4096),
    '\n/'.repeat(4096),
    '日'.repeat(8192),
  ];
  for (const text of runs) {
    const label = JSON.stringify(text.slice(0, 4));
    // At most about one token per piece of 256 characters either way.
    const slack = Math.ceil(text.length / 256) + 1;
    const o = countText(o200k, text);
    const c = countText(cl100k, text);
    t.ok(Math.abs(o - countTokens(text)) <= slack, `o200k_base ${label}: ${o} vs ${countTokens(text)}`);
    t.ok(Math.abs(c - countCl100k(text)) <= slack, `cl100k_base ${label}: ${c} vs ${countCl100k(text)}`);
  }
});

t.test('message counts: framing, media, cache', async (t) => {
  const counter = new TokenCounter(100);
  const profile = resolveModel('gpt-4o');
  const hello = { role: 'user', content: 'hello world' };
  t.equal(counter.countMessage(openaiChat, profile, hello), countTokens('hello world') + 3);
  const image = { role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] };
  t.equal(counter.countMessage(openaiChat, profile, image), 765 + 3, 'an image of unknown size is flat');
  const call = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }],
  };
  t.ok(counter.countMessage(openaiChat, profile, call) > 5, 'tool call name and arguments counted');
  const before = counter.stats();
  counter.countMessage(openaiChat, profile, { role: 'user', content: 'hello world' });
  t.equal(counter.stats().hits, before.hits + 1, 'an equal message is a cache hit');
  counter.countMessage(anthropic, profile, { role: 'user', content: 'hello world' });
  t.equal(counter.stats().misses, before.misses + 1, 'the format is part of the key');
  const uncached = new TokenCounter(0);
  t.equal(uncached.countMessage(openaiChat, profile, hello), counter.countMessage(openaiChat, profile, hello));
  t.equal(uncached.stats().entries, 0);
  t.equal(counter.countTools(profile, [{ type: 'function', function: { name: 'f' } }]) > 0, true);
  t.equal(counter.countSystem(anthropic, profile, [{ type: 'text', text: 'be brief' }]), countTokens('be brief') + 3);
  // An agent sends the same instructions and tools on every call: tokenized once, then found.
  const tools = [{ type: 'function', function: { name: 'read_file', description: 'Reads a file. '.repeat(40) } }];
  const system = [{ type: 'text', text: 'You are a careful coding agent. '.repeat(40) }];
  const first = [counter.countTools(profile, tools), counter.countSystem(anthropic, profile, system)];
  const seen = counter.stats();
  const again = [
    counter.countTools(profile, JSON.parse(JSON.stringify(tools))),
    counter.countSystem(anthropic, profile, JSON.parse(JSON.stringify(system))),
  ];
  t.same(again, first, 'the same counts');
  t.equal(counter.stats().misses, seen.misses, 'tools and system counted again from the cache');
  t.equal(counter.stats().hits, seen.hits + 2);
  t.same([uncached.countTools(profile, tools), uncached.countSystem(anthropic, profile, system)], first, 'as without a cache');
});

t.test('deep nesting is a 400, not a crash', async (t) => {
  let deep: unknown = 'x';
  for (let i = 0; i < 200_000; i++) deep = [deep];
  const err = t.throws(() => checkDepth({ role: 'user', content: 'x', extra: deep }, 'messages[3]'));
  t.ok(err instanceof CompactorError && err.code === 'CMP_ERR_REQUEST_TOO_DEEP');
  t.match((err as CompactorError).errors, [{ path: 'messages[3]' }]);
  let ok: unknown = 'x';
  for (let i = 0; i < MAX_DEPTH - 1; i++) ok = [ok];
  t.doesNotThrow(() => checkDepth(ok, 'x'), 'provider-sized nesting passes');
  // A place in a list is named only when it fails; the walk after a failure starts clean.
  const wide = { role: 'user', content: [{ a: [{ b: {} }] }, { c: deep }] };
  const inList = t.throws(() => checkDepth(wide, 'messages', 7));
  t.match((inList as CompactorError).errors, [{ path: 'messages[7]' }]);
  t.doesNotThrow(
    () => checkDepth({ role: 'user', content: [{ a: [{ b: {} }] }] }, 'messages', 8),
    'a shallow message after it passes',
  );
  let edge: unknown = 'x';
  for (let i = 0; i < MAX_DEPTH; i++) edge = [edge];
  t.doesNotThrow(() => checkDepth(edge, 'x'), 'exactly MAX_DEPTH levels pass');
  t.throws(() => checkDepth([edge], 'x'), 'one more does not');
});

t.test('reported usage of every provider', async (t) => {
  t.equal(reportedTotal({ prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 }), 120, 'OpenAI chat');
  t.equal(reportedTotal({ prompt_tokens: 100, completion_tokens: 20 }), 120, 'OpenAI chat without total');
  t.equal(
    reportedTotal({ input_tokens: 90, output_tokens: 10, total_tokens: 100, input_tokens_details: { cached_tokens: 50 } }),
    100,
    'Responses',
  );
  t.equal(
    reportedTotal({ input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000, output_tokens: 50 }),
    3260,
    'Anthropic: cache reads and writes are context too',
  );
  t.equal(
    reportedTotal({ promptTokenCount: 500, candidatesTokenCount: 40, thoughtsTokenCount: 60, totalTokenCount: 600 }),
    600,
    'Gemini',
  );
  t.equal(
    reportedTotal({ promptTokenCount: 500, candidatesTokenCount: 40, thoughtsTokenCount: 60 }),
    600,
    'Gemini without total',
  );
  t.equal(reportedTotal({ prompt_token_count: 5, candidates_token_count: 1 }), 6, 'Gemini snake_case');
  t.equal(reportedTotal({ foo: 1 }), undefined);

  t.equal(occupancyFromUsage({ total_tokens: 1000, messages_covered: 2 }, [10, 20, 30, 40]), 1070, 'usage plus what came after');
  t.equal(occupancyFromUsage({ total_tokens: 1000 }, [10, 20]), 1000, 'covers every message by default');
  t.throws(() => occupancyFromUsage({ total_tokens: 1, messages_covered: 9 }, [1]), { code: 'CMP_ERR_OPTIONS_INVALID' });
  t.throws(() => occupancyFromUsage({ nothing: 1 }, [1]), { code: 'CMP_ERR_OPTIONS_INVALID' });
});

t.test('a request starts with the tokenizer merge cache emptied when an earlier one filled it', async (t) => {
  const o200k = resolveModel('gpt-4o');
  const request = () => parseHistory({ messages: [{ role: 'user', content: 'hi' }], format: 'openai-chat' });
  request();
  countText(o200k, 'qzxvbnmlkj wqzxkvbp'); // words that are not one token each: their merges are cached
  t.ok(mergeCacheSize('o200k_base') > 0, "gpt-tokenizer's merge cache is where the counter looks for it");
  request();
  t.ok(mergeCacheSize('o200k_base') > 0, 'a small cache is kept across requests');
  // One request's text of 40,000 distinct pieces (identifiers such as generated ids or base64 chunks).
  for (let text = 0; text < 40; text++) {
    const words = Array.from({ length: 1000 }, (_, i) => `q${(text * 1000 + i).toString(36)}z`);
    countText(o200k, words.join(' '));
  }
  const filled = mergeCacheSize('o200k_base');
  t.ok(filled >= MERGE_CACHE_CLEAR_AT, `within the request the cache works as before (${filled} pieces)`);
  request();
  t.equal(mergeCacheSize('o200k_base'), 0, 'the next request starts with it empty');
});

t.test('a tagged message is counted once per profile and format, found by its tag, as untagged', async (t) => {
  const messages = [
    { role: 'user', content: 'hello world' },
    { role: 'assistant', content: 'a longer answer '.repeat(30) },
  ];
  const tagged = () => (parseJsonBytes(Buffer.from(JSON.stringify({ messages }))) as { messages: unknown[] }).messages;
  const counter = new TokenCounter(1000);
  const plain = new TokenCounter(0);
  const profiles = ['gpt-4o', 'gpt-4', 'claude-sonnet-4-5', 'gemini-2.5-pro', 'o3'].map((m) => resolveModel(m));
  // More (profile, format) readings than a tag keeps (`MAX_SLOTS`), twice over: each always its own count.
  for (let round = 0; round < 2; round++) {
    for (const profile of profiles) {
      for (const format of [openaiChat, anthropic]) {
        const expected = plain.countMessages(format, profile, structuredClone(messages));
        t.same(counter.countMessages(format, profile, tagged()), expected, `${profile.id} ${format.name}, round ${round}`);
      }
    }
  }
  const before = counter.stats();
  const again = counter.countMessages(anthropic, profiles[4] as ReturnType<typeof resolveModel>, tagged());
  t.same(again, plain.countMessages(anthropic, profiles[4] as ReturnType<typeof resolveModel>, structuredClone(messages)));
  t.equal(counter.stats().hits, before.hits + 2, 'the newest readings are found by the tag');
  t.equal(counter.stats().misses, before.misses, 'nothing counted again');
});

t.test("a tagged message's parts are counted as their texts, found by the tag beside its count", async (t) => {
  const messages = [{ role: 'tool', tool_call_id: 'c1', content: 'output line\n'.repeat(40) }];
  const tagged = () => (parseJsonBytes(Buffer.from(JSON.stringify({ messages }))) as { messages: unknown[] }).messages;
  const counter = new TokenCounter(1000);
  const plain = new TokenCounter(0);
  const profile = resolveModel('gpt-4o');
  const text = 'output line\n'.repeat(40);
  const tag = bodyTagOf(tagged()[0]);
  t.ok(tag, 'tagged');
  const expected = plain.countTextCached(profile, text);
  // The message's own count, then its parts at slots -1 to 3 (past the second: joined keys), twice.
  t.same(
    counter.countMessages(openaiChat, profile, tagged()),
    plain.countMessages(openaiChat, profile, structuredClone(messages)),
  );
  for (let round = 0; round < 2; round++) {
    for (const slot of [-1, 0, 1, 2, 3]) {
      t.equal(counter.countPartOfTag(profile, openaiChat, tag, slot, text), expected, `slot ${slot}, round ${round}`);
    }
  }
  const before = counter.stats();
  for (const slot of [-1, 0, 1, 2, 3]) counter.countPartOfTag(profile, openaiChat, tag, slot, text);
  t.equal(counter.stats().hits, before.hits + 5, 'each found again');
  t.equal(counter.stats().misses, before.misses, 'none counted again');
  t.equal(counter.countMessages(openaiChat, profile, tagged())[0], counter.countMessage(openaiChat, profile, tagged()[0]));
  const hits = counter.stats().hits;
  counter.countMessage(openaiChat, profile, tagged()[0]);
  t.equal(counter.stats().hits, hits + 1, "the message's own count still found by its tag beside its parts");
  // Untagged: counted by the text.
  t.equal(counter.countPartOfTag(profile, openaiChat, undefined, 0, text), expected);
  t.equal(counter.countPartOfTag(profile, openaiChat, tag, 0, 'short'), plain.countTextCached(profile, 'short'));
});
