import t, { type Test } from 'tap';
import type { LargeText, Reply, Scenario } from '../support/fake-provider.js';
import {
  anthropic,
  anthropicTurn,
  type Client,
  chatTurn,
  direct,
  gemini,
  geminiTurn,
  openai,
  proxied,
  responsesTurn,
} from '../support/sdk-calls.js';
import { answerHeaders, fake, headerOf, parsed, recordingFetch, stand } from '../support/sdk-stand.js';

/**
 * The official SDKs (`openai` 6, `@anthropic-ai/sdk` 1.16, `@google/genai` 2.32) through a real
 * listening Compactor against the fake provider, each call made twice: straight to a fake, and
 * through the proxy to a twin fake. The fake's answers carry ids from its record's position and
 * usage from its prompt-cache simulation, so each side gets a fresh fake and the call is each
 * one's first: the same request then has the same answer, and any byte the proxy changed shows.
 * The history is small: the proxy leaves it as it is (`x-compactor: unchanged`). Compared: the
 * status, the headers (but `date`, the connection's and `x-compactor-*`), every byte the SDK
 * received (recorded by its `fetch`), and what the SDK parsed.
 * Faults, disconnects and streaming order: proxy-sdks-faults.test.ts.
 */

interface Case {
  readonly name: string;
  readonly call: (c: Client) => Promise<unknown>;
  /** What the scenario answers (default: the fake's scripted tool steps). */
  readonly scenario?: Scenario;
}

/** Every event of an SDK stream, as the SDK parsed them. */
async function events(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

const large =
  (bytes: number): Scenario =>
  () =>
    ({ text: { bytes } satisfies LargeText }) satisfies Reply;

const CASES: Case[] = [
  { name: 'Anthropic Messages', call: (c) => anthropic(c).messages.create(anthropicTurn) },
  {
    name: 'Anthropic Messages, streaming (messages.stream: events and the final message)',
    call: async (c) => {
      const stream = anthropic(c).messages.stream(anthropicTurn);
      return { events: await events(stream), final: await stream.finalMessage() };
    },
  },
  {
    name: 'Anthropic Messages, streaming (create with stream: true)',
    call: async (c) => events(await anthropic(c).messages.create({ ...anthropicTurn, stream: true })),
  },
  {
    name: 'Anthropic count_tokens',
    call: (c) =>
      anthropic(c).messages.countTokens({
        model: anthropicTurn.model,
        system: anthropicTurn.system,
        tools: anthropicTurn.tools,
        messages: anthropicTurn.messages,
      }),
  },
  { name: 'OpenAI Responses', call: (c) => openai(c).responses.create(responsesTurn) },
  {
    name: 'OpenAI Responses, streaming',
    call: async (c) => events(await openai(c).responses.create({ ...responsesTurn, stream: true })),
  },
  {
    name: 'OpenAI Responses, streaming a 2 MB answer',
    scenario: large(2_000_000),
    call: async (c) => events(await openai(c).responses.create({ ...responsesTurn, stream: true })),
  },
  { name: 'OpenAI Chat Completions', call: (c) => openai(c).chat.completions.create(chatTurn) },
  {
    name: 'OpenAI Chat Completions, streaming',
    call: async (c) => events(await openai(c).chat.completions.create({ ...chatTurn, stream: true })),
  },
  {
    name: 'OpenAI Chat Completions, streaming with include_usage',
    call: async (c) =>
      events(await openai(c).chat.completions.create({ ...chatTurn, stream: true, stream_options: { include_usage: true } })),
  },
  { name: 'Gemini generateContent', call: (c) => gemini(c).models.generateContent(geminiTurn) },
  {
    name: 'Gemini generateContentStream',
    call: async (c) => events(await gemini(c).models.generateContentStream(geminiTurn)),
  },
  {
    name: 'Anthropic Messages, streaming a 2 MB answer',
    scenario: large(2_000_000),
    call: async (c) => events(await anthropic(c).messages.create({ ...anthropicTurn, stream: true })),
  },
];

/** The same SDK call straight to a fresh fake and through a Compactor to another: what each received. */
async function twice(t: Test, c: Case) {
  const straight = await fake(t, c.scenario);
  const { upstream, proxy } = await stand(t, c.scenario);
  const a = recordingFetch();
  const b = recordingFetch();
  const viaDirect = parsed(await c.call({ roots: direct(straight.url), fetch: a.fetch }));
  const viaProxy = parsed(await c.call({ roots: proxied(proxy), fetch: b.fetch }));
  return { straight, upstream, viaDirect, viaProxy, a: a.received, b: b.received };
}

for (const c of CASES) {
  t.test(`${c.name}: what the SDK receives through the proxy is byte-identical to a direct call`, async (t) => {
    const { straight, upstream, viaDirect, viaProxy, a, b } = await twice(t, c);
    t.equal(a.length, 1, 'one call straight');
    t.equal(b.length, 1, 'one call through the proxy');
    const [x, y] = [a[0], b[0]];
    if (!x || !y) return;
    t.equal(headerOf(y.headers, 'x-compactor'), 'unchanged', 'the proxy reduced nothing');
    t.equal(y.status, x.status, 'the status');
    t.same(answerHeaders(y.headers), answerHeaders(x.headers), 'the headers');
    const [sent, got] = [await x.bytes, await y.bytes];
    t.ok(sent.length > 0, 'an answer came');
    t.ok(got.equals(sent), `the body, byte for byte (${sent.length} bytes)`);
    t.same(viaProxy, viaDirect, 'what the SDK parsed');
    const [d, u] = [straight.requests[0], upstream.requests[0]];
    t.equal(upstream.requests.length, 1, 'one request upstream');
    t.ok(d && u?.raw.equals(d.raw), 'the request went upstream as the SDK sent it');
    t.equal(u?.url, d?.url, 'to the same path and query');
    for (const name of ['x-api-key', 'authorization', 'x-goog-api-key', 'anthropic-version', 'user-agent']) {
      t.equal(u?.headers[name], d?.headers[name], `the ${name} header, as sent`);
    }
  });
}
