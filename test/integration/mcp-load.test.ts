import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { MCP_MAX_BATCH } from '../../src/routes/mcp.js';
import type { Caller } from '../../src/service/artifacts.js';
import { PAUSE_EVERY, Pacer, SEARCH_LIMIT, searchOriginals } from '../../src/service/search.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Artifact, ArtifactStore, RecentLimit } from '../../src/store/types.js';
import { build, testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

/**
 * `/mcp` weighed like `/v1` (issue 39, finding 1): one 20 MiB original and a JSON-RPC batch of 100
 * searches took ~3 GiB and stalled the process for 20 s. A batch is bounded, what a search loads
 * counts against COMPACTOR_MAX_INFLIGHT_BYTES, and liveness is answered while searches run.
 */

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** One tool result of `chars` characters offloaded by a `/v1/compact`; returns its id. */
async function offload(t: Test, app: FastifyInstance, chars: number, tail: string): Promise<string> {
  const line = 'drwxr-xr-x 2 root root 4096 Dec  7 05:01 some/where/in/the/tree\n';
  const output = `${line.repeat(Math.ceil(chars / line.length)).slice(0, chars)}${tail}`;
  const res = await app.inject({
    method: 'POST',
    url: '/v1/compact',
    payload: {
      format: 'openai-chat',
      keep_tool_uses: 0,
      min_tokens: 1,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: output },
        { role: 'assistant', content: 'done' },
      ],
    },
  });
  t.equal(res.statusCode, 200, `the original is offloaded: ${res.statusCode === 200 ? '' : res.body.slice(0, 300)}`);
  return (res.json() as { artifacts: { id: string }[] }).artifacts[0]?.id as string;
}

const searches = (n: number, query: string, regex = false) =>
  Array.from({ length: n }, (_, i) => ({
    jsonrpc: '2.0',
    id: i + 1,
    method: 'tools/call',
    params: { name: 'search', arguments: { query, regex } },
  }));

t.test('a batch of 100 searches over a 20 MiB original is refused; a bounded batch runs while liveness answers', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  const { base } = await listen(app);
  await offload(t, app, 20 * 1024 * 1024, 'the end');

  const refused = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(searches(100, 'nowhere')),
  });
  t.equal(refused.status, 400, 'a batch over the bound is refused');
  const error = (await refused.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
  t.same({ jsonrpc: error.jsonrpc, id: error.id, code: error.error.code }, { jsonrpc: '2.0', id: null, code: -32600 });
  t.match(error.error.message, String(MCP_MAX_BATCH), 'naming the bound');

  // The largest batch taken is answered whole.
  const bounded = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(searches(MCP_MAX_BATCH, 'nowhere')),
  });
  t.equal(bounded.status, 200);
  const answers = (await bounded.json()) as { result: { content: { text: string }[] } }[];
  t.equal(answers.length, MCP_MAX_BATCH, 'every search of the batch is answered');
  t.ok(
    answers.every((one) => /No original matches/.test(one.result.content[0]?.text ?? '')),
    'each found nothing',
  );

  // A regular expression reads every line of the 20 MiB: liveness is answered while it runs.
  let done = false;
  const slow = fetch(`${base}/mcp`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(searches(1, 'no+where[0-9]', true)[0]),
  }).then(async (res) => {
    const body = (await res.json()) as { result: { content: { text: string }[] } };
    done = true;
    return { status: res.status, body };
  });
  let livesDuring = 0;
  while (!done) {
    const live = await fetch(`${base}/health/live`);
    await live.arrayBuffer();
    if (live.status === 200 && !done) livesDuring++;
  }
  const answered = await slow;
  t.equal(answered.status, 200);
  t.match(answered.body.result.content[0]?.text, /No original matches/);
  t.ok(livesDuring > 0, `/health/live answered while the search ran (${livesDuring} times)`);

  const found = await fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify(searches(1, 'the end')[0]) });
  t.match(((await found.json()) as { result: { content: { text: string }[] } }).result.content[0]?.text, /1 originals match/);
});

/** A memory store whose `recent` waits, from its second call on, until `open()` (a search parked mid-batch). */
class GatedStore extends MemoryStore {
  calls = 0;
  private opened!: () => void;
  readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });
  parked!: () => void;
  readonly reached = new Promise<void>((resolve) => {
    this.parked = resolve;
  });
  open(): void {
    this.opened();
  }
  override async recent(scope: string, kinds: readonly string[], now: number, limit: RecentLimit): Promise<Artifact[]> {
    if (++this.calls > 1) {
      this.parked();
      await this.gate;
    }
    return super.recent(scope, kinds, now, limit);
  }
}

t.test('what a search loads counts against COMPACTOR_MAX_INFLIGHT_BYTES while its request runs', async (t) => {
  const store = new GatedStore();
  const config = testConfig({
    COMPACTOR_BODY_LIMIT: String(2 * 1024 * 1024),
    COMPACTOR_MAX_INFLIGHT_BYTES: String(2 * 1024 * 1024),
  });
  const app = await buildApp(config, { logger: pino({ level: 'silent' }), store });
  t.teardown(() => app.close());
  const { base } = await listen(app);
  await offload(t, app, 1536 * 1024, 'the end');
  t.ok(SEARCH_LIMIT.bytes > 1536 * 1024, 'the original is within one search’s bound');

  // Two searches in one batch: the first loads the original, the second waits in the store.
  const batch = fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify(searches(2, 'nowhere')) });
  await store.reached;
  const meanwhile = await app.inject({
    method: 'POST',
    url: '/v1/tokens',
    payload: { format: 'openai-chat', messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }] },
  });
  t.equal(meanwhile.statusCode, 503, 'a /v1 request past the weight the search holds is refused');
  t.match(meanwhile.json(), { code: 'CMP_ERR_OVERLOADED' });
  store.open();
  const res = await batch;
  t.equal(res.status, 200, 'the searches are answered');
  await res.arrayBuffer();
  const after = await app.inject({
    method: 'POST',
    url: '/v1/tokens',
    payload: { format: 'openai-chat', messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }] },
  });
  t.equal(after.statusCode, 200, 'released once the MCP answer is sent');
});

/**
 * The largest number of characters of originals the main thread's store handed out in one read,
 * from the time it is installed: every `get` and `recent` of the store the app holds is counted.
 */
function readsOf(store: ArtifactStore): { largest: number; reads: number } {
  const seen = { largest: 0, reads: 0 };
  const count = (artifacts: Iterable<Artifact>) => {
    seen.reads++;
    for (const a of artifacts) seen.largest = Math.max(seen.largest, a.content.length);
  };
  const { get, recent } = store;
  store.get = async (...args: Parameters<ArtifactStore['get']>) => {
    const found = await get.apply(store, args);
    count(found.values());
    return found;
  };
  store.recent = async (...args: Parameters<ArtifactStore['recent']>) => {
    const found = await recent.apply(store, args);
    count(found);
    return found;
  };
  return seen;
}

t.test(
  'with a store of its own on the workers, a batch of searches and recalls of a 20 MiB original never reads it on the main thread',
  async (t) => {
    // Issue 39, finding 1: each search read the 20 MiB row from SQLite synchronously on the main
    // thread (/health/live stalled 369 ms on a batch of 10). The reads now run on a worker, whose
    // own connection reads the file: the main thread's store hands out no original at all.
    const dir = mkdtempSync(join(tmpdir(), 'compactor-mcp-worker-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const app = await build(t, { COMPACTOR_STORE_URL: `sqlite:${join(dir, 'store.db')}`, COMPACTOR_WORKERS: '1' });
    const { base } = await listen(app);
    const id = await offload(t, app, 20 * 1024 * 1024, 'the end of the listing');
    const main = readsOf(app.store);

    const recalls = Array.from({ length: MCP_MAX_BATCH / 2 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 100 + i,
      method: 'tools/call',
      params: { name: 'recall', arguments: { id, offset: i * 1000, max_tokens: 100 } },
    }));
    const batch = [...searches(MCP_MAX_BATCH / 2, 'the end of the listing'), ...recalls];
    let done = false;
    const answer = fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify(batch) }).then(async (res) => {
      const body = (await res.json()) as { id: number; result: { content: { text: string }[]; isError?: boolean } }[];
      done = true;
      return { status: res.status, body };
    });
    // /health/live while the batch runs: measured and reported, not asserted (a busy machine is slow).
    const latencies: number[] = [];
    while (!done) {
      const t0 = performance.now();
      const live = await fetch(`${base}/health/live`);
      await live.arrayBuffer();
      if (!done) latencies.push(performance.now() - t0);
    }
    const { status, body } = await answer;
    t.equal(status, 200);
    t.equal(body.length, MCP_MAX_BATCH, 'every call of the batch is answered');
    const texts = new Map(body.map((one) => [one.id, one.result.content[0]?.text ?? '']));
    for (let i = 1; i <= MCP_MAX_BATCH / 2; i++)
      t.match(texts.get(i), /1 originals match/, `search ${i} found the original's end`);
    for (let i = 0; i < MCP_MAX_BATCH / 2; i++) {
      t.match(texts.get(100 + i), `characters ${i * 1000}–${i * 1000 + 300} of `, `recall ${i} answered its page`);
    }
    t.equal(main.largest, 0, `the main thread's store handed out no original (${main.reads} reads)`);
    t.comment(
      `/health/live during the batch: ${latencies.length} probes, slowest ${Math.round(Math.max(0, ...latencies))} ms (not asserted)`,
    );

    // The same batch on a store in the main thread's memory runs in line: there the reads are the main thread's.
    const local = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_WORKERS: '1' });
    const localBase = (await listen(local)).base;
    await offload(t, local, 1024 * 1024, 'the end of the listing');
    const inLine = readsOf(local.store);
    const res = await fetch(`${localBase}/mcp`, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify(searches(1, 'the end of the listing')[0]),
    });
    t.match(((await res.json()) as { result: { content: { text: string }[] } }).result.content[0]?.text, /1 originals match/);
    t.ok(inLine.largest > 1024 * 1024, 'a memory store is read in line (the count sees what the main thread reads)');
  },
);

t.test('a search in line reads a 20 MiB original in slices, with a turn of the event loop between them', async (t) => {
  // Counted, not timed: the pacer says how often the search gave the event loop a turn and the
  // most characters it read between two turns, whatever the speed of the machine.
  const line = 'drwxr-xr-x 2 root root 4096 Dec  7 05:01 some/where/in/the/tree\n';
  const content = JSON.stringify({
    role: 'tool',
    tool_call_id: 'c1',
    content: line.repeat(Math.ceil((20 * 1024 * 1024) / line.length)),
  });
  const original: Artifact = {
    id: 'art_000000000000000000000001',
    kind: 'tool_result',
    tool_name: 'ls',
    content,
    sha256: '',
    created_at: 0,
    expires_at: Number.MAX_SAFE_INTEGER,
  };
  const caller = {} as Caller;
  const recent = async () => [original];
  for (const q of [
    { text: 'nowhere-to-be-found', regex: false, maxResults: 10 },
    { text: 'no+where[0-9]', regex: true, maxResults: 10 },
  ]) {
    const pacer = new Pacer();
    const result = await searchOriginals(recent, q, caller, undefined, pacer);
    t.same(result.hits, [], `${q.text}: nothing found`);
    t.ok(
      pacer.turns >= Math.floor(content.length / PAUSE_EVERY),
      `${q.text}: ${pacer.turns} turns over ${content.length} characters`,
    );
    t.ok(
      pacer.longest <= PAUSE_EVERY + line.length + q.text.length,
      `${q.text}: at most ${pacer.longest} characters read between two turns`,
    );
  }
});
