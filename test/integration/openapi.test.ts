import { readFileSync } from 'node:fs';
import t from 'tap';
import { REQUEST_EXAMPLES } from '../../src/schemas/examples/requests.js';
import { build } from '../support/app.js';

const committed = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'));

t.test('the committed openapi/openapi.json is what the app serves (run `npm run openapi` after changing a schema)', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  t.equal(res.statusCode, 200);
  const served = res.json();
  t.same(served, committed, 'no drift between the route schemas and the committed document');
  t.equal(served.openapi, '3.1.0');
  for (const path of ['/v1/window', '/v1/tokens', '/v1/validate', '/health/live', '/health/ready']) {
    t.ok(served.paths[path], `documents ${path}`);
  }
  const window = served.paths['/v1/window'].post;
  t.ok(window.responses['200'] && window.responses['400'], 'success and problem responses are described');
  const errors: string[] = [];
  for (const [path, methods] of Object.entries(served.paths as Record<string, Record<string, { responses: object }>>)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses as Record<string, { content?: object }>)) {
        const content = response.content ?? {};
        const type = JSON.stringify(content).includes('#/components/schemas/Problem')
          ? 'application/problem+json'
          : 'application/json';
        if (Number(status) >= 400 && Object.keys(content).join() !== type)
          errors.push(`${method} ${path} ${status}: ${Object.keys(content)}`);
      }
    }
  }
  t.same(
    errors,
    [],
    'every problem response is documented as application/problem+json, any other as application/json, as they are sent',
  );
  for (const path of ['/v1/summarize', '/v1/fit']) {
    const responses = served.paths[path].post.responses;
    t.ok(responses['502'] && responses['503'] && responses['504'], `${path} documents the summarizer's 502, 503 and 504`);
  }
  t.equal(served.components.securitySchemes, undefined, 'a service without keys names no scheme (no Authorize button)');
  t.notMatch(JSON.stringify(served.paths), /"security"/, 'nor any lock');
});

t.test('with keys configured, /v1 operations name the bearer scheme (the Authorize button and the locks)', async (t) => {
  const app = await build(t, { COMPACTOR_API_KEYS: 'openapi-test-key-0123456789' });
  const served = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  t.equal(served.components.securitySchemes.bearerAuth.scheme, 'bearer', 'the document says how to authenticate');
  for (const [path, methods] of Object.entries(served.paths as Record<string, Record<string, { security?: unknown }>>)) {
    for (const [method, op] of Object.entries(methods)) {
      if (path.startsWith('/v1/')) t.same(op.security, [{ bearerAuth: [] }], `${method} ${path} needs the bearer scheme`);
      else t.equal(op.security, undefined, `${method} ${path} is open on the default scope`);
    }
  }
});

t.test('every answer reads verdict first: documented and sent in that order, the long arrays last', async (t) => {
  const app = await build(t);
  const served = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const kind of ['window', 'compact', 'summarize', 'fit']) {
    const title = `${kind.charAt(0).toUpperCase()}${kind.slice(1)}Response`;
    const documented = Object.keys(served.components.schemas[title].properties);
    t.same(documented.slice(0, 2), ['applied', 'reason'], `${title} documents applied and reason first`);
    t.same(documented.slice(-2), ['actions', 'messages'], `${title} documents actions and messages last`);
    const example = Object.values(REQUEST_EXAMPLES[`/v1/${kind}`] ?? {})[0];
    const res = await app.inject({ method: 'POST', url: `/v1/${kind}`, payload: example?.value as object });
    t.equal(res.statusCode, 200);
    const sent = Object.keys(JSON.parse(res.body));
    t.same(
      sent,
      documented.filter((key) => sent.includes(key)),
      `POST /v1/${kind} sends its fields in the documented order`,
    );
  }
  const fit = Object.keys(served.components.schemas.FitResponse.properties);
  t.same(fit.slice(0, 5), ['applied', 'reason', 'cost', 'call_again_at', 'tokens'], "fit's verdict and its cost come first");
  for (const [title, first, last] of [
    ['TokensResponse', 'total', 'messages'],
    ['ExpandResponse', 'restored', 'messages'],
    ['Artifact', 'id', 'content'],
  ] as const) {
    const keys = Object.keys(served.components.schemas[title].properties);
    t.same([keys[0], keys.at(-1)], [first, last], `${title}: ${first} first, ${last} last`);
  }
});

t.test("fit's description opens with two plain sentences: what it does, and how to call it", async (t) => {
  const [opening = ''] = committed.paths['/v1/fit'].post.description.split('\n\n');
  t.equal(opening.match(/[.!?](\s|$)/g)?.length, 2, 'two sentences');
  t.notMatch(opening, /[`(=]/, 'no code, no asides, no options');
});
