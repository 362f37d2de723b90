import type { Test } from 'tap';
import type { Config } from '../../src/config.js';
import { build } from './app.js';
import { FakeProvider, type Scenario } from './fake-provider.js';
import { listen } from './net.js';

/**
 * The official SDKs through the proxy (test/integration/proxy-sdks*.test.ts): a fake provider
 * behind a real listening Compactor, a twin fake for the direct call, and a `fetch` that records
 * what the SDK itself received (status, headers, every byte, when the first one came) while the
 * SDK parses the same answer.
 */

/** A real listening Compactor whose three upstreams are one fake provider. */
export interface Stand {
  /** The fake behind the proxy. */
  readonly upstream: FakeProvider;
  /** The proxy's root: the SDKs' base URLs are `${proxy}/anthropic`, `${proxy}/openai/v1`, `${proxy}/gemini`. */
  readonly proxy: string;
}

/** Starts a fake provider stopped when the test ends. */
export async function fake(t: Pick<Test, 'teardown'>, scenario?: Scenario): Promise<FakeProvider> {
  const provider = await new FakeProvider(scenario ? { scenario } : {}).start();
  t.teardown(() => provider.stop());
  return provider;
}

/** A fake provider and a Compactor listening in front of it (`overrides` over the test config). */
export async function stand(t: Test, scenario?: Scenario, overrides: Partial<Record<keyof Config, string>> = {}): Promise<Stand> {
  const upstream = await fake(t, scenario);
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: upstream.url,
    COMPACTOR_UPSTREAM_OPENAI: upstream.url,
    COMPACTOR_UPSTREAM_GEMINI: upstream.url,
    ...overrides,
  });
  const { base } = await listen(app);
  return { upstream, proxy: base };
}

/** One answer as the SDK's `fetch` received it. */
export interface Received {
  readonly status: number;
  readonly headers: [string, string][];
  /** Every byte of the body, once it ended (or what came before the stream was cut). */
  readonly bytes: Promise<Buffer>;
  /** `performance.now()` when the first chunk of the body arrived, once one did. */
  readonly firstChunkAt: number | undefined;
}

/** Reads a body to its end (or its cut), noting when its first chunk came. */
function drain(body: ReadableStream<Uint8Array>, first: (at: number) => void): Promise<Buffer> {
  return (async () => {
    const chunks: Uint8Array[] = [];
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (chunks.length === 0) first(performance.now());
        chunks.push(value);
      }
    } catch {
      // A cut stream: what came is what the SDK saw.
    }
    return Buffer.concat(chunks);
  })();
}

/**
 * A `fetch` for an SDK's options that records each answer it hands the SDK (a copy of its body,
 * read as it comes), and the list it records into.
 */
export function recordingFetch(): { fetch: typeof fetch; received: Received[] } {
  const received: Received[] = [];
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const headers = [...res.headers];
    if (!res.body) {
      received.push({ status: res.status, headers, bytes: Promise.resolve(Buffer.alloc(0)), firstChunkAt: undefined });
      return res;
    }
    const [mine, theirs] = res.body.tee();
    let firstChunkAt: number | undefined;
    const bytes = drain(mine, (at) => {
      firstChunkAt = at;
    });
    received.push({
      status: res.status,
      headers,
      bytes,
      get firstChunkAt() {
        return firstChunkAt;
      },
    });
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { fetch: recording, received };
}

/** Response headers that differ between any two answers or belong to the connection, not the answer. */
const VOLATILE = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/** The headers an answer's comparison keeps: all but `date`, the connection's, and Compactor's own. */
export function answerHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (VOLATILE.has(lower) || lower.startsWith('x-compactor')) continue;
    out[lower] = value;
  }
  return out;
}

/** A header's value in a recorded list. */
export function headerOf(headers: Iterable<[string, string]>, name: string): string | undefined {
  for (const [n, v] of headers) if (n.toLowerCase() === name) return v;
  return undefined;
}

/**
 * An SDK's parsed result as plain JSON, with the HTTP headers some SDKs copy into it (Gemini's
 * `sdkHttpResponse`) reduced to the compared ones.
 */
export function parsed(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v: unknown) =>
    key === 'sdkHttpResponse' && typeof v === 'object' && v !== null
      ? { ...v, headers: answerHeaders(Object.entries((v as { headers?: Record<string, string> }).headers ?? {})) }
      : v,
  );
}

/** Polls `done` until it holds; fails after `ms` (a hang detector, not a speed assertion). */
export async function eventually(done: () => boolean | Promise<boolean>, ms = 30_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}
