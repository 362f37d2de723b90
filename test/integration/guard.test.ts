import { request as httpRequest } from 'node:http';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../support/app.js';
import { FakeProvider } from '../support/fake-provider.js';
import { listen } from '../support/net.js';

const history = { messages: [{ role: 'user', content: 'hello' }] };

t.test('API keys: bearer, constant-time, ops endpoints open by default', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-one-0123456789, key-two-0123456789' });
  const post = (headers: Record<string, string>) => app.inject({ method: 'POST', url: '/v1/tokens', payload: history, headers });
  const none = await post({});
  t.equal(none.statusCode, 401);
  t.equal(none.json().code, 'CMP_ERR_AUTH_REQUIRED');
  t.equal(none.headers['www-authenticate'], 'Bearer realm="compactor"');
  const wrong = await post({ authorization: 'Bearer key-three-0123456789' });
  t.equal(wrong.statusCode, 401);
  t.equal(wrong.json().code, 'CMP_ERR_AUTH_INVALID');
  t.notMatch(wrong.body, /key-three-0123456789|key-one-0123456789/, 'keys are never echoed');
  t.equal((await post({ authorization: 'Bearer key-two-0123456789' })).statusCode, 200);
  t.equal((await post({ authorization: 'bearer key-one-0123456789' })).statusCode, 200, 'the scheme is case-insensitive');
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'health stays open');
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200, 'metrics stay open');
  t.equal((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200, 'docs stay open');
});

t.test('API keys with scope all guard everything', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-k-0123456789ab', COMPACTOR_AUTH_SCOPE: 'all' });
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
  t.equal(
    (await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer key-k-0123456789ab' } })).statusCode,
    200,
  );
});

t.test(
  'scope all: the proxy and /mcp take the key where they read it (the proxy’s Authorization is the provider’s)',
  async (t) => {
    const fake = await new FakeProvider().start();
    t.teardown(() => fake.stop());
    const key = 'key-k-0123456789ab';
    const app = await build(t, {
      COMPACTOR_API_KEYS: key,
      COMPACTOR_AUTH_SCOPE: 'all',
      COMPACTOR_UPSTREAM_OPENAI: fake.url,
      COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    });
    const chat = { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hello' }] };
    const call = (headers: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/openai/v1/chat/completions', payload: chat, headers });
    // Codex and the OpenAI SDKs send their provider key as a bearer: Compactor's key goes in x-compactor-key.
    const codex = await call({ authorization: 'Bearer sk-openai-0123456789', 'x-compactor-key': key });
    t.equal(codex.statusCode, 200, 'an OpenAI client’s call reaches the provider');
    t.equal(fake.modelRequests().at(-1)?.headers.authorization, 'Bearer sk-openai-0123456789', 'with its own credential');
    t.equal((await call({ authorization: 'Bearer sk-openai-0123456789' })).statusCode, 401, 'without Compactor’s key, refused');
    const claude = await app.inject({
      method: 'POST',
      url: '/anthropic/v1/messages',
      payload: { model: 'claude-opus-4-8', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] },
      headers: { 'x-api-key': 'sk-ant-0123456789', 'x-compactor-key': key },
    });
    t.equal(claude.statusCode, 200, 'an Anthropic client with x-compactor-key only');
    const mcp = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/mcp',
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        headers: { accept: 'application/json, text/event-stream', ...headers },
      });
    t.equal((await mcp({ 'x-compactor-key': key })).statusCode, 200, '/mcp with x-compactor-key, as its docs say');
    t.equal((await mcp({})).statusCode, 401, '/mcp without a key');
    t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401, 'the rest stays guarded');
  },
);

t.test('rate limit: 429 with retry-after, per client, /v1 only', async (t) => {
  const app = await build(t, { COMPACTOR_RATE_LIMIT: '3' });
  const codes: number[] = [];
  for (let i = 0; i < 5; i++) codes.push((await app.inject({ method: 'POST', url: '/v1/tokens', payload: history })).statusCode);
  t.same(codes, [200, 200, 200, 429, 429]);
  const limited = await app.inject({ method: 'POST', url: '/v1/tokens', payload: history });
  t.equal(limited.json().code, 'CMP_ERR_RATE_LIMITED');
  t.ok(Number(limited.headers['retry-after']) > 0, 'retry-after given');
  t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'health is not limited');
  const other = await app.inject({ method: 'POST', url: '/v1/tokens', payload: history, remoteAddress: '10.1.2.3' });
  t.equal(other.statusCode, 200, 'another client has its own budget');
});

/**
 * Blocks the event loop in slices until under-pressure has measured a delay past its limit (its
 * sample comes every second): waits on the measure, to a generous deadline, not on a duration.
 */
async function saturate(app: FastifyInstance): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!app.isUnderPressure()) {
    if (Date.now() > deadline) throw new Error('the event-loop delay was never measured past the limit');
    const end = Date.now() + 300;
    while (Date.now() < end) {
      // Saturate the event loop, as a burst of heavy requests would.
    }
    await new Promise((r) => setImmediate(r));
  }
}

/** A `/v1` request whose body is still arriving: in flight until `finish`. */
async function holdRequest(base: string) {
  const req = httpRequest(`${base}/v1/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
  });
  const answered = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
  });
  const body = JSON.stringify(history);
  req.write(body.slice(0, 5));
  await new Promise((r) => req.once('socket', r));
  return {
    finish: () => {
      req.end(body.slice(5));
      return answered;
    },
  };
}

t.test('a saturated event loop sheds load with 503 and retry-after; health keeps answering; it recovers', async (t) => {
  const app = await build(t, { COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '50' });
  const { base } = await listen(app);
  const held = await holdRequest(base);
  // The held request is in flight once the app weighed its first bytes: the metrics say so.
  for (let seen = false, end = Date.now() + 60_000; !seen; ) {
    if (Date.now() > end) throw new Error('the held request was never counted');
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    seen = /^compactor_inflight_bytes [1-9]/m.test(metrics.body);
    if (!seen) await new Promise((r) => setTimeout(r, 20));
  }
  await saturate(app);
  const shed = await app.inject({ method: 'POST', url: '/v1/tokens', payload: history });
  t.equal(shed.statusCode, 503);
  t.equal(shed.json().code, 'CMP_ERR_OVERLOADED');
  t.equal(shed.headers['retry-after'], '5');
  t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'liveness is not shed');
  t.equal(await held.finish(), 200, 'the request in flight is answered');
  let recovered = 0;
  // Polled to a generous deadline (30 s): a busy machine frees the loop late, not never.
  for (let i = 0; i < 300 && recovered !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    recovered = (await app.inject({ method: 'POST', url: '/v1/tokens', payload: history })).statusCode;
  }
  t.equal(recovered, 200, 'serves again once the loop is free');
});

t.test('a lagging event loop with nothing in flight does not shed the one request there is (a busy boot)', async (t) => {
  // Issue 39 #11: right after boot on a busy machine, the first /v1/compact was shed 3 times of 3.
  const app = await build(t, { COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '50' });
  await saturate(app);
  const first = await app.inject({ method: 'POST', url: '/v1/tokens', payload: history });
  t.equal(first.statusCode, 200, 'served: nothing of ours was in flight');
});

t.test('requests take turns in arrival order; past the queue wait limit new ones get 503 with retry-after', async (t) => {
  const app = await build(t, { COMPACTOR_MAX_QUEUE_WAIT_MS: '20', COMPACTOR_TOKEN_CACHE_ENTRIES: '0' });
  // Distinct bodies of distinct words, each costing a ms or more to count: 60 of them queue for
  // well over 20 ms.
  const heavy = (i: number) => ({
    messages: [{ role: 'user', content: Array.from({ length: 6000 }, (_, k) => `r${i}w${k}`).join(' ') }],
  });
  const order: number[] = [];
  const burst = Array.from({ length: 60 }, (_, i) =>
    app.inject({ method: 'POST', url: '/v1/tokens', payload: heavy(i) }).then((r) => {
      order.push(i);
      return r;
    }),
  );
  // Not a timer: once the fifth answer is in, 55 requests are queued behind whatever the machine's
  // speed, and the queue has measured its time per turn, so the next arrival must be shed.
  await burst[4];
  const late = await app.inject({ method: 'POST', url: '/v1/tokens', payload: history });
  const health = await app.inject({ method: 'GET', url: '/health/live' });
  const answers = await Promise.all(burst);
  t.ok(
    answers.every((a) => a.statusCode === 200),
    'the burst, already queued, is served',
  );
  t.same(
    order,
    [...order].sort((a, b) => a - b),
    'served in arrival order',
  );
  t.equal(late.statusCode, 503, 'a request arriving behind a queue over the limit is shed');
  t.equal(late.json().code, 'CMP_ERR_OVERLOADED');
  t.ok(Number(late.headers['retry-after']) >= 1, `retry-after ${late.headers['retry-after']}`);
  t.equal(health.statusCode, 200, 'health does not queue');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /compactor_queue_wait_seconds_count \d+/);
  t.match(metrics, /compactor_queue_depth 0/);
  t.equal((await app.inject({ method: 'POST', url: '/v1/tokens', payload: history })).statusCode, 200, 'serves again');
});

/** A concrete request target for a route pattern (`:id` and `*` filled in). */
const concrete = (url: string) => url.replace(/:[^/]+/g, 'art_000000000000000000000000').replace(/\*/g, 'index.html');

t.test('every route the app serves, with and without a key, decided on the route matched', async (t) => {
  for (const scope of ['api', 'all'] as const) {
    // Upstreams off: the proxy routes still answer (with the provider's error), but never dial out.
    const app = await build(t, {
      COMPACTOR_API_KEYS: 'key-one-0123456789',
      COMPACTOR_AUTH_SCOPE: scope,
      COMPACTOR_UPSTREAM_ANTHROPIC: 'off',
      COMPACTOR_UPSTREAM_OPENAI: 'off',
      COMPACTOR_UPSTREAM_GEMINI: 'off',
    });
    t.ok(app.routeTable.length >= 12, `${app.routeTable.length} routes registered`);
    for (const route of app.routeTable) {
      const url = concrete(route.url);
      const method = route.method as 'GET' | 'POST' | 'HEAD';
      const payload = method === 'POST' ? history : undefined;
      const bare = await app.inject({ method, url, ...(payload ? { payload } : {}) });
      const keyed = await app.inject({
        method,
        url,
        // The proxy reads its key from x-compactor-key (its Authorization is the provider's).
        headers: { authorization: 'Bearer key-one-0123456789', 'x-compactor-key': 'key-one-0123456789' },
        ...(payload ? { payload } : {}),
      });
      t.equal(
        route.protected,
        // The `/ui` page's static files hold no data: open under either scope (what they read is /v1).
        (scope === 'all' && route.url !== '/ui' && !route.url.startsWith('/ui/')) ||
          route.url.startsWith('/v1/') ||
          route.url === '/mcp' ||
          /^\/(anthropic|openai|gemini)\//.test(route.url),
        `${method} ${route.url} protected as its scope says`,
      );
      if (route.protected) t.equal(bare.statusCode, 401, `${scope}: ${method} ${route.url} without a key`);
      else t.not(bare.statusCode, 401, `${scope}: ${method} ${route.url} is open`);
      t.not(keyed.statusCode, 401, `${scope}: ${method} ${route.url} with the key`);
    }
  }
});

t.test('percent-encoded and odd spellings of /v1 paths reach no handler without a key', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-one-0123456789', COMPACTOR_RATE_LIMIT: '1000' });
  const api = app.routeTable.filter((r) => r.url.startsWith('/v1/'));
  for (const route of api) {
    const rest = concrete(route.url).slice('/v1'.length);
    for (const prefix of ['/%76%31', '/v%31', '/%56%31', '/v1/.', '/v1%2F']) {
      const url = `${prefix}${rest}`;
      const method = route.method as 'GET' | 'POST' | 'HEAD';
      const res = await app.inject({ method, url, ...(method === 'POST' ? { payload: history } : {}) });
      t.ok([401, 404].includes(res.statusCode), `${method} ${url}: ${res.statusCode}`);
    }
  }
});

t.test('over a real socket: absolute-form and encoded request targets need the key too', async (t) => {
  const { connect } = await import('node:net');
  const { listen } = await import('../support/net.js');
  const app = await build(t, { COMPACTOR_API_KEYS: 'key-one-0123456789' });
  const { port } = await listen(app);
  const raw = (target: string, auth?: string) =>
    new Promise<string>((resolve, reject) => {
      const body = JSON.stringify(history);
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${auth ? `authorization: ${auth}\r\n` : ''}connection: close\r\n\r\n${body}`,
        );
      });
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk.toString();
      });
      socket.on('end', () => resolve(data.split('\r\n')[0] ?? ''));
      socket.on('error', reject);
    });
  for (const target of [
    `http://127.0.0.1:${port}/v1/tokens`,
    '/%76%31/tokens',
    '/v%31/tokens',
    `http://evil.example/v1/tokens`,
  ]) {
    const status = await raw(target);
    t.match(status, /^HTTP\/1\.1 (401|404|400)/, `${target} without a key: ${status}`);
    t.notMatch(status, /^HTTP\/1\.1 200/, `${target} never answers 200 without a key`);
  }
  t.match(
    await raw(`http://127.0.0.1:${port}/v1/tokens`, 'Bearer key-one-0123456789'),
    /^HTTP\/1\.1 200/,
    'with the key it is served',
  );
});

/** A request over a real socket with its own `Host` header (fetch may not set one). */
function withHost(
  port: number,
  host: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return new Promise<{ status: number; type: string; text: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method,
      path,
      headers: {
        host,
        ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        ...headers,
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const anthropicCall = {
  model: 'claude-opus-4-8',
  max_tokens: 100,
  messages: [{ role: 'user', content: 'hello' }],
};
const mcpList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const mcpHeaders = { accept: 'application/json, text/event-stream' };

/** Every kind of route: health, metrics, docs and Swagger UI, a /v1 operation, /mcp and the proxy. */
const ROUTES: [string, string, unknown?, Record<string, string>?][] = [
  ['GET', '/health/live'],
  ['GET', '/health/ready'],
  ['GET', '/metrics'],
  ['GET', '/openapi.json'],
  ['GET', '/docs/'],
  ['POST', '/v1/tokens', history],
  ['POST', '/mcp', mcpList, mcpHeaders],
  ['POST', '/anthropic/v1/messages', anthropicCall, { 'x-api-key': 'sk-ant-user', 'anthropic-version': '2023-06-01' }],
];

t.test('without keys, a Host that is a DNS name not configured is refused with 421 on every route (DNS rebinding)', async (t) => {
  const fake = await new FakeProvider().start();
  t.teardown(() => fake.stop());
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_ALLOWED_HOSTS: 'compactor.internal, .svc.cluster.local',
  });
  const { port } = await listen(app);
  const legitimate = [
    `127.0.0.1:${port}`,
    `localhost:${port}`,
    `[::1]:${port}`,
    'LOCALHOST',
    'compactor:8080',
    'app.localhost',
    '10.0.0.7:8080',
    'compactor.internal',
    'compactor.default.svc.cluster.local:8080',
  ];
  for (const host of legitimate) {
    for (const [method, path, body, headers] of ROUTES) {
      const res = await withHost(port, host, method, path, body, headers);
      t.ok(res.status >= 200 && res.status < 400, `${host} ${method} ${path}: ${res.status}`);
    }
  }
  for (const host of [
    `evil.example:${port}`,
    'rebind.127.0.0.1.nip.io',
    'localhost.attacker.com',
    'compactor.internal.evil.com',
  ]) {
    for (const [method, path, body, headers] of ROUTES) {
      const res = await withHost(port, host, method, path, body, headers);
      t.equal(res.status, 421, `${host} ${method} ${path}: 421`);
      t.match(res.type, /application\/problem\+json/);
      const problem = JSON.parse(res.text);
      t.equal(problem.code, 'CMP_ERR_REQUEST_HOST_NOT_ALLOWED');
      t.ok(problem.detail.includes(JSON.stringify(host)), 'the detail names the Host');
      t.match(problem.errors, [{ path: 'headers.host' }]);
    }
  }
  t.equal(fake.modelRequests().length, legitimate.length, 'only the legitimate hosts reached the provider');
});

t.test('with keys the key stands in the way and Host is not checked, unless COMPACTOR_ALLOWED_HOSTS is set', async (t) => {
  const keyed = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: 'key-one-0123456789' });
  const { port } = await listen(keyed);
  const auth = { authorization: 'Bearer key-one-0123456789' };
  t.equal(
    (await withHost(port, 'compactor.example.com', 'POST', '/v1/tokens', history, auth)).status,
    200,
    'any name with the key',
  );
  t.equal((await withHost(port, 'compactor.example.com', 'POST', '/v1/tokens', history)).status, 401, 'without it, 401');
  const named = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_API_KEYS: 'key-one-0123456789',
    COMPACTOR_ALLOWED_HOSTS: 'compactor.example.com',
  });
  const { port: namedPort } = await listen(named);
  t.equal((await withHost(namedPort, 'compactor.example.com', 'POST', '/v1/tokens', history, auth)).status, 200);
  t.equal((await withHost(namedPort, 'other.example.com', 'POST', '/v1/tokens', history, auth)).status, 421);
  t.equal((await withHost(namedPort, 'other.example.com', 'GET', '/health/live')).status, 421);
});

t.test('a name HOST is bound to is served; * serves any name', async (t) => {
  const bound = await build(t, { COMPACTOR_STORE_URL: 'memory:', HOST: 'compactor.lan' });
  t.equal((await bound.inject({ method: 'GET', url: '/health/live', headers: { host: 'compactor.lan:8080' } })).statusCode, 200);
  t.equal((await bound.inject({ method: 'GET', url: '/health/live', headers: { host: 'other.lan' } })).statusCode, 421);
  const any = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_ALLOWED_HOSTS: '*' });
  t.equal((await any.inject({ method: 'GET', url: '/health/live', headers: { host: 'other.lan' } })).statusCode, 200);
});

t.test('COMPACTOR_ALLOWED_HOSTS must list host names: a configuration error naming it otherwise', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  for (const value of ['http://compactor.lan', 'compactor.lan:8080', ' , ', 'a b', 'x/y']) {
    t.throws(() => loadConfig({ COMPACTOR_ALLOWED_HOSTS: value }), /COMPACTOR_ALLOWED_HOSTS/, JSON.stringify(value));
  }
  t.same(loadConfig({ COMPACTOR_ALLOWED_HOSTS: 'A.example, .svc.local,*' }).COMPACTOR_ALLOWED_HOSTS, [
    'a.example',
    '.svc.local',
    '*',
  ]);
});
