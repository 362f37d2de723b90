import { connect } from 'node:net';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { openStore } from '../../src/store/index.js';
import type { ArtifactStore } from '../../src/store/types.js';
import { testConfig } from '../support/app.js';
import type { RecordedRequest, Reply } from '../support/fake-provider.js';
import { listen } from '../support/net.js';
import {
  anthropic,
  anthropicTurn,
  type Client,
  chatTurn,
  gemini,
  geminiTurn,
  openai,
  proxied,
  responsesTurn,
} from '../support/sdk-calls.js';
import { eventually, fake, stand } from '../support/sdk-stand.js';

/**
 * Streams through the proxy with the official SDKs: a client that aborts mid-stream (an
 * AbortController) ends the upstream request, whether the answer is long or stalled, and so does
 * one that leaves before the headers or while the proxy is still reducing; and an answer streams
 * (the client reads its first events while the provider is still writing). No speed is asserted:
 * a hang detector (`eventually`, 30 s) fails a proxy that holds the upstream request open (its
 * own timeout here is the default ten minutes).
 */

interface StreamApi {
  readonly name: string;
  readonly open: (c: Client, signal: AbortSignal) => Promise<AsyncIterable<unknown>>;
}

const STREAMS: StreamApi[] = [
  {
    name: 'Anthropic Messages',
    open: (c, signal) => anthropic(c).messages.create({ ...anthropicTurn, stream: true }, { signal }),
  },
  { name: 'OpenAI Responses', open: (c, signal) => openai(c).responses.create({ ...responsesTurn, stream: true }, { signal }) },
  {
    name: 'OpenAI Chat Completions',
    open: (c, signal) => openai(c).chat.completions.create({ ...chatTurn, stream: true }, { signal }),
  },
  {
    name: 'Gemini generateContentStream',
    open: (c, signal) =>
      gemini(c).models.generateContentStream({ ...geminiTurn, config: { ...geminiTurn.config, abortSignal: signal } }),
  },
];

const ANSWERS: { name: string; reply: Reply }[] = [
  { name: 'a 256 MB answer', reply: { text: { bytes: 256 * 1024 * 1024 } } },
  {
    name: 'an answer that stalls after 4 events',
    reply: { text: 'word '.repeat(200), fault: { kind: 'stall', afterEvents: 4 } },
  },
];

/** Reads a stream until `events` came, aborts, and reads on until the SDK gives up: how many came before the abort. */
async function abortAfter(t: Test, stream: AsyncIterable<unknown>, abort: AbortController, events: number): Promise<number> {
  let seen = 0;
  try {
    for await (const _ of stream) {
      seen++;
      if (seen === events) abort.abort();
    }
    if (seen >= events) t.pass('the stream ended after the abort');
  } catch (error) {
    t.ok(abort.signal.aborted, `the SDK threw after the abort (${(error as Error).name})`);
  }
  return seen;
}

const closed = (r: RecordedRequest | undefined) => r?.timing.endMs !== undefined;

for (const api of STREAMS) {
  for (const answer of ANSWERS) {
    t.test(`${api.name}: a client that aborts mid-stream (${answer.name}) ends the upstream request`, async (t) => {
      const { upstream, proxy } = await stand(t, () => answer.reply);
      const abort = new AbortController();
      const stream = await api.open({ roots: proxied(proxy) }, abort.signal);
      const seen = await abortAfter(t, stream, abort, 2);
      t.ok(seen >= 2, 'the first events came through');
      const r = upstream.modelRequests()[0];
      t.ok(await eventually(() => closed(r)), 'the fake provider saw its answer closed');
      t.equal(r?.timing.finishMs, undefined, 'before the answer was written whole');
    });
  }

  t.test(`${api.name}: a client that leaves before the headers ends the upstream request`, async (t) => {
    const { upstream, proxy } = await stand(t, () => ({ delayMs: 120_000, text: 'late' }));
    const abort = new AbortController();
    const opened = api.open({ roots: proxied(proxy) }, abort.signal).then(
      () => 'opened',
      () => 'failed',
    );
    t.ok(await eventually(() => upstream.modelRequests().length === 1), 'the request went upstream');
    abort.abort();
    t.equal(await opened, 'failed', 'the SDK gave up');
    t.ok(await eventually(() => closed(upstream.modelRequests()[0])), 'the fake provider saw its request closed');
  });
}

t.test(
  'Anthropic Messages: a streamed 20 MB answer streams: the first events come while the provider still writes',
  async (t) => {
    const bytes = 20 * 1024 * 1024;
    const { upstream, proxy } = await stand(t, () => ({ text: { bytes } }));
    const stream = await anthropic({ roots: proxied(proxy) }).messages.create({ ...anthropicTurn, stream: true });
    let text = 0;
    let events = 0;
    let finishedAtFirst: boolean | undefined;
    for await (const event of stream) {
      events++;
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        if (finishedAtFirst === undefined) finishedAtFirst = upstream.modelRequests()[0]?.timing.finishMs !== undefined;
        text += event.delta.text.length;
        // A slow consumer, for the first events: the provider cannot finish ahead of it.
        if (events < 20) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    t.equal(finishedAtFirst, false, 'the first text came before the provider had written its answer');
    t.equal(text, bytes, 'then the whole answer');
    t.ok(await eventually(() => upstream.modelRequests()[0]?.timing.finishMs !== undefined), 'and the provider finished');
  },
);

/** A memory store whose reads wait until the test ends (a store that stalls while the proxy reduces); `reading` resolves at the first. */
async function stallingStore(t: Test): Promise<{ store: ArtifactStore; reading: Promise<void> }> {
  const inner = await openStore('memory:');
  let release = () => {};
  let entered = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reading = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const store: ArtifactStore = Object.create(inner, {
    get: {
      value: async (...args: Parameters<ArtifactStore['get']>) => {
        entered();
        return gate.then(() => inner.get(...args));
      },
    },
  });
  t.teardown(async () => {
    release();
    await inner.close();
  });
  return { store, reading };
}

t.test('a client that leaves while the proxy still reduces (a stalled store): nothing is held upstream', async (t) => {
  const upstream = await fake(t, () => ({ delayMs: 120_000, text: 'late' }));
  const { store, reading } = await stallingStore(t);
  const config = testConfig({
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: upstream.url,
    COMPACTOR_PROXY_BUDGET_MS: '1500',
  });
  const app = await buildApp(config, { logger: pino({ level: 'silent' }), store });
  let open = true;
  t.teardown(() => (open ? app.close() : undefined));
  const { port } = await listen(app);
  const body = JSON.stringify({ ...anthropicTurn, stream: true });
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(
    `POST /anthropic/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: sk-ant-test\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // Gone while the proxy waits on the store; past the budget, the proxy goes on to forward.
  await reading;
  socket.destroy();
  const bypassed = async () =>
    /reason="budget"[^\n]* 1/.test(await app.metrics.registry.getSingleMetricAsString('compactor_proxy_bypass_total'));
  t.ok(await eventually(bypassed), 'the budget passed (a bypass)');
  // The proxy's upstream pool closes once its requests have ended: one held open would hold it (two minutes here).
  const ended = await Promise.race([
    app.close().then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000).unref()),
  ]);
  open = false;
  t.ok(ended, 'the proxy let go of the request: no upstream request held open');
  t.ok(upstream.modelRequests().every(closed), 'any request that reached the provider was closed');
});
