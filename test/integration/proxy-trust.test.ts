import { request as httpRequest } from 'node:http';
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { build } from '../support/app.js';
import { FakeProvider, type Scenario } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

/**
 * Issue 39's proxy findings, each against a real listening Compactor and the fake provider:
 * proxied bodies weighed against `COMPACTOR_MAX_INFLIGHT_BYTES` (#2), paths confined to the
 * upstream's base path (#4), Compactor's key never forwarded as a bearer (#5), absolute-form
 * targets refused (#6).
 */

const KEY = 'compactor-key-0123456789';

async function stand(t: Test, overrides: Partial<Record<keyof Config, string>>, scenario?: Scenario) {
  const fake = await new FakeProvider(scenario ? { scenario } : {}).start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_UPSTREAM_OPENAI: fake.url,
    COMPACTOR_UPSTREAM_GEMINI: fake.url,
    COMPACTOR_PROXY_BUDGET_MS: '30000',
    ...overrides,
  });
  const { base, port } = await listen(app);
  return { app, base, port, fake };
}

/** A raw request (no client normalising its target): status, headers and body. */
function raw(port: number, method: string, target: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('#4: a path that leaves the upstream base path is refused in the provider’s shape', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_OPENAI: `${fake.url}/base/openai`,
    COMPACTOR_UPSTREAM_ANTHROPIC: `${fake.url}/base/anthropic`,
  });
  const { port } = await listen(app);
  const auth = { authorization: 'Bearer sk-user' };
  for (const target of [
    '/openai/../../admin',
    '/openai/%2e%2e/%2e%2e/admin',
    '/openai/.%2e/.%2e/admin',
    '/openai/v1/..\\..\\..\\admin',
    '/openai/v1/%2E%2E/%2e./%2e%2E/admin',
    '/openai/..',
  ]) {
    const res = await raw(port, 'GET', target, auth);
    t.equal(res.status, 400, `${target}: 400`);
    t.match(JSON.parse(res.body), { error: { type: 'invalid_request_error', param: null } }, `${target}: OpenAI's shape`);
  }
  const a = await raw(port, 'GET', '/anthropic/v1/../../../admin', { 'x-api-key': 'sk-ant' });
  t.equal(a.status, 400);
  t.match(JSON.parse(a.body), { type: 'error', error: { type: 'invalid_request_error' } });
  t.notOk(
    fake.requests.some((r) => !r.path.startsWith('/base/')),
    'nothing reached the upstream outside its base',
  );
  const inside = await raw(port, 'GET', '/openai/v1/x/../models', auth);
  t.not(inside.status, 400, 'a path that stays inside the base is forwarded');
  t.equal(fake.requests.at(-1)?.path, '/base/openai/v1/models', 'normalised as the upstream would');
});

t.test('#5: an Authorization bearer holding Compactor’s key never goes upstream; a provider bearer does', async (t) => {
  const { base, fake } = await stand(t, { COMPACTOR_API_KEYS: KEY });
  const ours = await fetch(`${base}/anthropic/v1/models`, {
    headers: { 'x-compactor-key': KEY, authorization: `Bearer ${KEY}`, 'x-api-key': 'sk-ant-user' },
  });
  await ours.arrayBuffer();
  const sent = fake.requests.at(-1);
  t.equal(sent?.headers.authorization, undefined, 'our key dropped');
  t.equal(sent?.headers['x-api-key'], 'sk-ant-user', 'the provider credential kept');
  t.notOk(JSON.stringify(sent?.headers).includes(KEY), 'our key nowhere upstream');
  const theirs = await fetch(`${base}/openai/v1/models`, {
    headers: { 'x-compactor-key': KEY, authorization: 'Bearer sk-openai' },
  });
  await theirs.arrayBuffer();
  t.equal(fake.requests.at(-1)?.headers.authorization, 'Bearer sk-openai', "the provider's bearer kept");
});

t.test('#6: absolute-form request targets are refused (400, the provider’s shape), never forwarded', async (t) => {
  const { port, fake } = await stand(t, {});
  const res = await raw(port, 'GET', `http://127.0.0.1:${port}/anthropic/v1/models`, { 'x-api-key': 'sk-ant' });
  t.equal(res.status, 400);
  t.match(JSON.parse(res.body), { type: 'error', error: { type: 'invalid_request_error', message: /absolute-form/ } });
  const gem = await raw(port, 'GET', `http://127.0.0.1:${port}/gemini/v1beta/models`, {});
  t.equal(gem.status, 400);
  t.match(JSON.parse(gem.body), { error: { code: 400, status: 'INVALID_ARGUMENT' } });
  t.equal(fake.requests.length, 0, 'nothing forwarded');
});

/** An Anthropic body of about `bytes`, in a few dozen messages. */
function heavyBody(bytes: number, tag: string): string {
  const messages: unknown[] = [{ role: 'user', content: `Task ${tag}.` }];
  const each = Math.floor(bytes / 20);
  for (let i = 0; i < 20; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'Bash', input: { command: 'cat' } }] });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: `${tag} ${i} `.padEnd(each, 'y') }],
    });
  }
  return JSON.stringify({ model: 'claude-opus-4-8', max_tokens: 1000, messages });
}

/** A scenario that answers nothing until `n` model calls are all at the fake: they are then all in flight at once. */
function gathering(n: number): { scenario: Scenario; all: Promise<void> } {
  let arrived = 0;
  let open: () => void = () => undefined;
  const all = new Promise<void>((resolve) => {
    open = resolve;
  });
  const scenario: Scenario = async () => {
    arrived++;
    if (arrived >= n) open();
    await all;
    return { text: 'done' };
  };
  return { scenario, all };
}

const inflightOf = (metrics: string) => Number(/^compactor_inflight_bytes (\d+)/m.exec(metrics)?.[1] ?? Number.NaN);

t.test(
  '#2: proxied bodies are weighed against COMPACTOR_MAX_INFLIGHT_BYTES; past it they go upstream unread (reason=load)',
  async (t) => {
    const n = 6;
    const mib = 1024 * 1024;
    const { scenario, all } = gathering(n);
    const { app, base, port, fake } = await stand(
      t,
      { COMPACTOR_BODY_LIMIT: String(4 * mib), COMPACTOR_MAX_INFLIGHT_BYTES: String(8 * mib) },
      scenario,
    );
    const bodies = Array.from({ length: n }, (_, i) => heavyBody(3 * mib, `b${i}`));
    // Half with a content-length (refused before a byte is read), half chunked (refused as their weight grows).
    const send = (body: string, i: number) =>
      i % 2 === 0
        ? fetch(`${base}/anthropic/v1/messages`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': `sk-ant-${i}`, 'anthropic-version': '2023-06-01' },
            body,
          }).then(async (res) => ({ status: res.status, x: res.headers.get('x-compactor') ?? '', text: await res.text() }))
        : chunked(port, body, `sk-ant-${i}`);
    // The first alone until it reaches the provider (read and handled with room to spare), then the
    // rest at once: which of several streaming bodies the bound lets through depends on how their
    // chunks interleave, and on a busy machine each can take room another then lacks.
    const first = send(bodies[0] as string, 0);
    for (let i = 0; i < 3000 && fake.modelRequests().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const answers = [first, ...bodies.slice(1).map((body, i) => send(body, i + 1))];
    await all;
    const during = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    t.ok(inflightOf(during) <= 8 * mib, `in flight while all ${n} were held: ${inflightOf(during)} bytes, within the bound`);
    const results = await Promise.all(answers);
    t.ok(
      results.every((r) => r.status === 200),
      'every model call answered by the provider',
    );
    const load = results.filter((r) => r.x === 'bypass; reason=load').length;
    // Each weighs over 3 MiB: at most two fit in 8 MiB at once, and all six were in flight together.
    t.ok(load >= n - 2, `${load} of ${n} forwarded unread for load (${results.map((r) => r.x).join(', ')})`);
    t.ok(load < n, 'those with room were handled as usual');
    const sent = fake.modelRequests().map((r) => r.raw.toString('utf8'));
    for (const [i, r] of results.entries()) {
      if (r.x === 'bypass; reason=load') t.ok(sent.includes(bodies[i] as string), `body ${i} reached the provider byte for byte`);
    }
    const after = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    t.match(after, new RegExp(`compactor_proxy_bypass_total\\{provider="anthropic",reason="load"\\} ${load}`));
    t.equal(inflightOf(after), 0, 'every weight given back');
  },
);

t.test('#2: a body streamed through unread for load gives its weight back once sent, not when its answer ends', async (t) => {
  const mib = 1024 * 1024;
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let calls = 0;
  // The first two model calls are answered only once the gate opens; any later one at once.
  const scenario: Scenario = async () => {
    calls++;
    if (calls <= 2) await gate;
    return { text: 'done' };
  };
  const { app, base, port, fake } = await stand(
    t,
    { COMPACTOR_BODY_LIMIT: String(8 * mib), COMPACTOR_MAX_INFLIGHT_BYTES: String(8 * mib) },
    scenario,
  );
  const inflight = async () => inflightOf((await app.inject({ method: 'GET', url: '/metrics' })).body);
  const reached = async (n: number) => {
    for (let i = 0; i < 3000 && fake.modelRequests().length < n; i++) await new Promise((r) => setTimeout(r, 10));
    return fake.modelRequests().length;
  };
  const post = (body: string, key: string) =>
    fetch(`${base}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body,
    }).then(async (res) => ({ status: res.status, x: res.headers.get('x-compactor') ?? '', text: await res.text() }));
  // A call handled as usual, its answer held: it keeps its weight (about 3 MiB) until the answer ends.
  const held = post(heavyBody(3 * mib, 'held'), 'sk-ant-held');
  t.equal(await reached(1), 1, 'the first call reached the provider');
  const base3 = await inflight();
  t.ok(base3 > 3 * mib && base3 < 4 * mib, `its weight held (${base3})`);
  // Chunked, larger than the room left: it takes room as it arrives, runs out, and goes on unread.
  const big = heavyBody(7 * mib, 'big');
  const streamed = chunked(port, big, 'sk-ant-big');
  t.equal(await reached(2), 2, 'the big body reached the provider whole');
  let now = await inflight();
  for (let i = 0; i < 3000 && now > base3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    now = await inflight();
  }
  t.equal(now, base3, 'its answer still pending, nothing of the unread body is weighed');
  // A call that fits the room left is handled as usual meanwhile.
  const small = await post(heavyBody(mib, 'small'), 'sk-ant-small');
  t.equal(small.status, 200);
  t.not(small.x, 'bypass; reason=load', `handled, not bypassed (${small.x})`);
  open();
  const [first, second] = await Promise.all([held, streamed]);
  t.equal(first.status, 200);
  t.not(first.x, 'bypass; reason=load', 'the first handled as usual');
  t.equal(second.status, 200, 'the big call answered');
  t.equal(second.x, 'bypass; reason=load', 'having gone on unread');
  t.ok(
    fake.modelRequests().some((r) => r.raw.toString('utf8') === big),
    'byte for byte',
  );
  t.equal(await inflight(), 0, 'every weight given back');
});

/** A POST whose body goes in chunks without a content-length. */
function chunked(port: number, body: string, key: string) {
  return new Promise<{ status: number; x: string; text: string }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/anthropic/v1/messages',
        headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            x: String(res.headers['x-compactor'] ?? ''),
            text: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on('error', reject);
    const bytes = Buffer.from(body);
    for (let at = 0; at < bytes.length; at += 256 * 1024) req.write(bytes.subarray(at, at + 256 * 1024));
    req.end();
  });
}
