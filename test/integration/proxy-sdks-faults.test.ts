import {
  APIError as AnthropicError,
  InternalServerError as AnthropicInternal,
  RateLimitError as AnthropicRateLimit,
} from '@anthropic-ai/sdk';
import { ApiError as GeminiError } from '@google/genai';
import { APIError as OpenAIError, InternalServerError as OpenAIInternal, RateLimitError as OpenAIRateLimit } from 'openai';
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { build } from '../support/app.js';
import type { Reply } from '../support/fake-provider.js';
import { freePort, listen } from '../support/net.js';
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
import { answerHeaders, fake, headerOf, recordingFetch, stand } from '../support/sdk-stand.js';

/**
 * An upstream's errors through the proxy, as the official SDKs see them: a 429 and a 500 reach
 * the client exactly as the provider sent them (status, `retry-after`, its error body, byte for
 * byte as a direct call gets them; the SDK's own error class), and what the proxy itself answers
 * when the upstream hangs past `COMPACTOR_PROXY_TIMEOUT_MS` or is down is a 502 in the
 * provider's own error shape, which the SDK reads as that provider's server error.
 */

type ErrorClass = abstract new (...args: never[]) => Error;

interface Api {
  readonly name: string;
  readonly call: (c: Client) => Promise<unknown>;
  /** The SDK's error classes for a 429, for a 5xx, and its base class. */
  readonly rateLimit: ErrorClass;
  readonly server: ErrorClass;
  readonly base: ErrorClass;
  /** The provider's own error shape (what a 502 of the proxy's must look like). */
  readonly shape: (status: number) => unknown;
}

// What each SDK keeps of the body: Anthropic's the whole `{type: "error", error}`, OpenAI's its `error` object.
const anthropicShape = { type: 'error', error: { type: String, message: String } };
const openaiShape = { message: String, type: String };

const APIS: Api[] = [
  {
    name: 'Anthropic Messages',
    call: (c) => anthropic(c).messages.create(anthropicTurn),
    rateLimit: AnthropicRateLimit,
    server: AnthropicInternal,
    base: AnthropicError,
    shape: () => anthropicShape,
  },
  {
    name: 'Anthropic Messages, streaming',
    call: async (c) => {
      for await (const _ of await anthropic(c).messages.create({ ...anthropicTurn, stream: true }));
    },
    rateLimit: AnthropicRateLimit,
    server: AnthropicInternal,
    base: AnthropicError,
    shape: () => anthropicShape,
  },
  {
    name: 'OpenAI Responses',
    call: (c) => openai(c).responses.create(responsesTurn),
    rateLimit: OpenAIRateLimit,
    server: OpenAIInternal,
    base: OpenAIError,
    shape: () => openaiShape,
  },
  {
    name: 'OpenAI Chat Completions, streaming',
    call: async (c) => {
      for await (const _ of await openai(c).chat.completions.create({ ...chatTurn, stream: true }));
    },
    rateLimit: OpenAIRateLimit,
    server: OpenAIInternal,
    base: OpenAIError,
    shape: () => openaiShape,
  },
  {
    name: 'Gemini generateContent',
    call: (c) => gemini(c).models.generateContent(geminiTurn),
    rateLimit: GeminiError,
    server: GeminiError,
    base: GeminiError,
    shape: (status) => ({ error: { code: status, message: String, status: String } }),
  },
];

/** What a call threw (it must throw). */
async function thrown(t: Test, call: () => Promise<unknown>): Promise<Error | undefined> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  t.fail('the call should have failed');
  return undefined;
}

/** The error body the SDK kept: OpenAI's and Anthropic's `error`, Gemini's message (the body as JSON). */
function errorBody(error: Error | undefined): unknown {
  if (error instanceof GeminiError) return JSON.parse(error.message);
  return (error as { error?: unknown } | undefined)?.error;
}

for (const api of APIS) {
  for (const status of [429, 500]) {
    t.test(`${api.name}: an upstream ${status} reaches the SDK exactly as the provider sent it`, async (t) => {
      const fault: Reply = { fault: { kind: 'status', status, retryAfter: 7, message: `scripted ${status}` } };
      const straight = await fake(t);
      const { upstream, proxy } = await stand(t);
      straight.enqueue(fault);
      upstream.enqueue(fault);
      const a = recordingFetch();
      const b = recordingFetch();
      const wanted = await thrown(t, () => api.call({ roots: direct(straight.url), fetch: a.fetch }));
      const error = await thrown(t, () => api.call({ roots: proxied(proxy), fetch: b.fetch }));
      t.type(error, status === 429 ? api.rateLimit : api.server, 'the SDK’s own error class');
      t.equal((error as { status?: number }).status, status, 'the status');
      const [x, y] = [a.received[0], b.received[0]];
      if (!x || !y) return t.fail('both answers recorded');
      t.equal(y.status, status);
      t.equal(headerOf(y.headers, 'retry-after'), '7', 'retry-after');
      t.same(answerHeaders(y.headers), answerHeaders(x.headers), 'every header as a direct call gets them');
      t.ok((await y.bytes).equals(await x.bytes), 'the provider’s error body, byte for byte');
      t.same(errorBody(error), errorBody(wanted), 'the error as the SDK parsed it');
      t.match(errorBody(error), api.shape(status), 'in the provider’s own shape');
      t.equal(upstream.modelRequests().length, 1, 'sent once: nothing retried');
    });
  }
}

/** A Compactor whose upstreams are all `url` (a fake, or a port nobody listens on). */
async function proxyTo(t: Test, url: string, overrides: Partial<Record<keyof Config, string>> = {}): Promise<string> {
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: url,
    COMPACTOR_UPSTREAM_OPENAI: url,
    COMPACTOR_UPSTREAM_GEMINI: url,
    ...overrides,
  });
  return (await listen(app)).base;
}

/** The proxy's own 502: the SDK's server error, in the provider's shape, with what went wrong in a word. */
async function expect502(t: Test, api: Api, proxy: string, kind: string): Promise<void> {
  const b = recordingFetch();
  const error = await thrown(t, () => api.call({ roots: proxied(proxy), fetch: b.fetch }));
  t.type(error, api.server, 'the SDK’s server error');
  t.type(error, api.base);
  t.equal((error as { status?: number }).status, 502, '502');
  t.match(errorBody(error), api.shape(502), 'in the provider’s own error shape');
  t.match(JSON.stringify(errorBody(error)), kind, `says ${kind}`);
  const y = b.received[0];
  t.match(headerOf(y?.headers ?? [], 'content-type'), /^application\/json/);
}

for (const api of APIS) {
  t.test(`${api.name}: an upstream that hangs past COMPACTOR_PROXY_TIMEOUT_MS is a 502 in the provider’s shape`, async (t) => {
    const { upstream } = await stand(t);
    upstream.enqueue({ delayMs: 120_000, text: 'too late' });
    const proxy = await proxyTo(t, upstream.url, { COMPACTOR_PROXY_TIMEOUT_MS: '1500' });
    await expect502(t, api, proxy, 'timeout');
    t.equal(upstream.modelRequests().length, 1, 'the upstream had the request');
  });

  t.test(`${api.name}: an upstream that is down is a 502 in the provider’s shape`, async (t) => {
    const port = await freePort();
    const proxy = await proxyTo(t, `http://127.0.0.1:${port}`);
    await expect502(t, api, proxy, 'connect');
  });
}

const CUTS: { name: string; reply: Reply }[] = [
  { name: 'resets its connection', reply: { text: 'word '.repeat(200), fault: { kind: 'reset', afterEvents: 4 } } },
  {
    name: 'stalls past COMPACTOR_PROXY_TIMEOUT_MS',
    reply: { text: 'word '.repeat(200), fault: { kind: 'stall', afterEvents: 4 } },
  },
];

for (const api of APIS.filter((a) => a.name.endsWith('streaming'))) {
  for (const cut of CUTS) {
    t.test(`${api.name}: an upstream that ${cut.name} mid-stream is a cut stream to the SDK, never a clean end`, async (t) => {
      const { proxy } = await stand(t, () => cut.reply, { COMPACTOR_PROXY_TIMEOUT_MS: '1500' });
      const b = recordingFetch();
      const error = await thrown(t, () => api.call({ roots: proxied(proxy), fetch: b.fetch }));
      t.ok(error, `the SDK’s stream failed (${error?.name})`);
      t.equal(b.received[0]?.status, 200, 'after a 200 and the first events: the headers were sent');
      t.ok((await b.received[0]?.bytes)?.length, 'the events before the cut came through');
    });
  }
}
