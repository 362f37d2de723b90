import { readFileSync } from 'node:fs';
import t from 'tap';
import { ERRORS } from '../../src/errors.js';
import { PROBLEMS } from '../../src/plugins/external/openapi-examples.js';
import { build } from '../support/app.js';

type Json = Record<string, unknown>;
interface Media {
  schema?: Json;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: Json }>;
}
interface Operation {
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description?: string; content?: Record<string, Media> }>;
}

const doc = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
};
const recorded = JSON.parse(readFileSync(new URL('../../openapi/examples.json', import.meta.url), 'utf8')) as {
  responses: Record<string, Record<string, unknown>>;
};
const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ path, method, op })),
);
const STRATEGIES = ['/v1/window', '/v1/compact', '/v1/summarize', '/v1/fit'];

/** Every property of every object schema under `value` that has no description, by where it is. */
function undescribed(value: unknown, where: string, into: string[]): string[] {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) undescribed(v, `${where}[${i}]`, into);
  } else if (value !== null && typeof value === 'object') {
    const node = value as Json;
    if (node.properties && typeof node.properties === 'object') {
      for (const [name, prop] of Object.entries(node.properties as Record<string, Json>)) {
        if (typeof prop.description !== 'string' || prop.description === '') into.push(`${where}.${name}`);
      }
    }
    // Examples are values, not schemas.
    for (const [key, v] of Object.entries(node))
      if (key !== 'example' && key !== 'examples') undescribed(v, `${where}/${key}`, into);
  }
  return into;
}

t.test('every object property in the document has a description', async (t) => {
  const missing = undescribed(doc.components.schemas, '#/components/schemas', []);
  for (const { path, method, op } of operations) undescribed(op, `${method} ${path}`, missing);
  t.same(missing, [], 'no property without a description');
});

t.test('each schema is one component (no input/output twins such as WindowRequest and WindowRequestInput)', async (t) => {
  const names = Object.keys(doc.components.schemas);
  const twins = names.filter((name) => /(Input|Output)$/.test(name) && names.includes(name.replace(/(Input|Output)$/, '')));
  t.same(twins, []);
  t.notOk(JSON.stringify(doc).includes('Default Response'), 'no response is a "Default Response"');
});

t.test('every response has a description and an example; every POST has named request examples', async (t) => {
  for (const { path, method, op } of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      t.ok(response.description && response.description !== 'Default Response', `${method} ${path} ${status} described`);
      const media = Object.values(response.content ?? {})[0];
      t.ok(media?.example !== undefined, `${method} ${path} ${status} has an example`);
    }
    if (method !== 'post') continue;
    const examples = op.requestBody?.content['application/json']?.examples ?? {};
    t.ok(Object.keys(examples).length > 0, `POST ${path} has request examples`);
    for (const [name, example] of Object.entries(examples)) t.ok(example.summary, `POST ${path} ${name} has a summary`);
  }
  for (const path of ['/v1/window', '/v1/compact']) {
    const examples = doc.paths[path]?.post?.requestBody?.content['application/json']?.examples ?? {};
    t.same(Object.keys(examples).sort(), ['anthropic', 'gemini', 'openai-chat', 'openai-responses'], `${path}: one per format`);
  }
  for (const [status, problem] of Object.entries(PROBLEMS)) {
    t.equal(ERRORS[problem.code].status, Number(status), `the ${status} example's code ${problem.code} answers ${status}`);
  }
});

t.test('every request example answers 200 on the real app; strategy examples reduce; recorded answers are current', async (t) => {
  // The secret `npm run openapi` records with (scripts/gen-openapi.mjs): artifact ids depend on it.
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_ARTIFACT_SECRET: 'openapi-examples-0123456789abcdef0123456789',
  });
  for (const { path, op } of operations.filter((o) => o.method === 'post')) {
    const examples = Object.entries(op.requestBody?.content['application/json']?.examples ?? {});
    for (const [i, [name, example]] of examples.entries()) {
      const res = await app.inject({ method: 'POST', url: path, payload: example.value });
      t.equal(res.statusCode, 200, `POST ${path} ${name}: 200 (${res.statusCode === 200 ? '' : res.body.slice(0, 300)})`);
      const body = res.json() as Json & { applied?: boolean; format?: string; tokens?: { before: number; after: number } };
      if (path === '/v1/fit' && name === 'prepare') {
        // Under the target nothing changes; the summary a later call needs is being prepared.
        t.equal(body.applied, false, 'POST /v1/fit prepare changes nothing yet');
        t.match(body.prepared, { state: /started|running|ready/ }, 'POST /v1/fit prepare starts preparing');
      } else if (STRATEGIES.includes(path)) {
        t.ok(body.applied === true && body.tokens && body.tokens.after < body.tokens.before, `POST ${path} ${name} reduces`);
        t.equal(body.format, name, `POST ${path} ${name} is read as ${name}`);
      }
      if (i === 0)
        t.same(
          body,
          recorded.responses[`POST ${path}`]?.['200'],
          `POST ${path}: the recorded example is its answer (npm run openapi)`,
        );
    }
  }
});
