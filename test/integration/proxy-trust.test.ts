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
  const theirs = await fetch(`${base}/openai/v1/models`, { headers: { 'x-compactor-key': KEY, authorization: 'Bearer sk-openai' } });
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
