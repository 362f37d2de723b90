import autocannon from 'autocannon';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { loadCorpus } from '../support/corpus.js';
import { FakeOpenAI } from '../support/fake-openai.js';
import { violationsOf } from '../support/invariants.js';
import { listen } from '../support/net.js';

/**
 * Load, kept short for CI (the full-length run is in bench/): 64 connections against /v1/fit and
 * /v1/window with a mid-size real history, the fake LLM answering in 200 ms; every response is
 * checked. Then past saturation: 503s with retry-after, and no crash. Each run sends a number of
 * requests, not a duration's worth, and waits for every answer (a per-request timeout of minutes
 * only catches a hang): a slow or busy machine takes longer, and passes.
 */
const corpus = loadCorpus();
const mid = corpus.find((x) => x.file.includes('django__django-16560'));
const largest = corpus.at(-1);
/** Requests per connection (COMPACTOR_LOAD_SECONDS, the name bench/ and older runs use, scales it). */
const ROUNDS = Number(process.env.COMPACTOR_LOAD_SECONDS ?? 4);

interface Run {
  statuses: Map<number, number>;
  invalid: string[];
  errors: number;
  requests: number;
}

async function load(
  url: string,
  body: unknown,
  connections: number,
  check?: (json: unknown) => string | undefined,
): Promise<Run & { sent: number }> {
  const sent = connections * ROUNDS;
  const run: Run = { statuses: new Map(), invalid: [], errors: 0, requests: 0 };
  const result = await autocannon({
    url,
    method: 'POST',
    connections,
    amount: sent,
    timeout: 300,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    setupClient: (client) => {
      client.on('body', (buffer: Buffer) => {
        if (!check) return;
        let json: unknown;
        try {
          json = JSON.parse(buffer.toString('utf8'));
        } catch {
          // A body cut off when the run stops mid-response: not an answer of the service's.
          return;
        }
        const problem = check(json);
        if (problem) run.invalid.push(problem);
      });
    },
  });
  run.errors = result.errors + result.timeouts;
  run.requests = result.requests.total;
  for (const [code, count] of Object.entries(result.statusCodeStats ?? {}))
    run.statuses.set(Number(code), (count as { count: number }).count);
  return { ...run, sent };
}

t.test('64 connections on /v1/fit and /v1/window: zero errors, zero invalid outputs', async (t) => {
  if (!mid) throw new Error('corpus missing');
  const llm = await new FakeOpenAI().start();
  t.teardown(() => llm.stop());
  llm.fallback = () => ({ delayMs: 200, content: '## Goal and constraints\nFix the bug.\n## Current state\nTests pass.' });
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      OPENAI_BASE_URL: llm.url,
      COMPACTOR_SUMMARIZER_MODEL: 'fake',
      COMPACTOR_SUMMARIZER_CONCURRENCY: '16',
    }),
    { logger: pino({ level: 'silent' }) },
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const valid = (json: unknown) => {
    const body = json as { messages?: unknown[]; code?: string };
    if (!body.messages) return `no messages: ${body.code}`;
    const v = violationsOf(mid.format, body.messages);
    return v.length ? JSON.stringify(v[0]) : undefined;
  };
  for (const [path, payload] of [
    ['/v1/window', { messages: mid.messages, keep: { messages: 40 } }],
    ['/v1/fit', { messages: mid.messages, target_tokens: 8000 }],
  ] as const) {
    const run = await load(`${base}${path}`, payload, 64, valid);
    t.equal(run.requests, run.sent, `${path}: every one of ${run.sent} requests answered`);
    t.equal(run.errors, 0, `${path}: no connection errors or timeouts`);
    t.same([...run.statuses.keys()], [200], `${path}: every answer 200`);
    t.same(run.invalid.slice(0, 3), [], `${path}: every output valid`);
  }
});

t.test('past saturation: 503 with retry-after, then recovery, no crash', async (t) => {
  if (!largest) throw new Error('corpus missing');
  const app = await buildApp(
    testConfig({
      COMPACTOR_STORE_URL: 'memory:',
      COMPACTOR_MAX_QUEUE_WAIT_MS: '50',
      COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '50',
      COMPACTOR_TOKEN_CACHE_ENTRIES: '0',
    }),
    { logger: pino({ level: 'silent' }) },
  );
  t.teardown(() => app.close());
  const { base } = await listen(app);
  const run = await load(`${base}/v1/tokens`, { messages: largest.messages }, 32);
  const codes = [...run.statuses.keys()].sort();
  t.ok(
    codes.every((c) => c === 200 || c === 503),
    `only 200 and 503: ${codes.join(', ')}`,
  );
  t.ok((run.statuses.get(503) ?? 0) > 0, `shed ${run.statuses.get(503) ?? 0} requests`);
  // (guard.test.ts checks the retry-after header of a shed request.)
  let status = 0;
  for (let i = 0; i < 300 && status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 200));
    status = (
      await fetch(`${base}/v1/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"messages":[{"role":"user","content":"hi"}]}',
      })
    ).status;
  }
  t.equal(status, 200, 'serves again afterwards');
});
