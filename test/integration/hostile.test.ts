import fc from 'fast-check';
import t from 'tap';
import { build } from '../support/app.js';

/**
 * Hostile input: hundreds of generated malformed or oversized requests across every endpoint
 * (fast-check arbitraries over the request schemas' shapes, with wrong types, unknown keys,
 * broken histories and junk bytes). None may get a 5xx, crash the process or leave memory behind.
 */
const ENDPOINTS = ['/v1/window', '/v1/compact', '/v1/summarize', '/v1/fit', '/v1/tokens', '/v1/validate', '/v1/expand'];

const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(-1, 0, 1e308, Number.MAX_SAFE_INTEGER + 2, '', '__proto__', 'constructor'),
  fc.array(fc.anything({ maxDepth: 3 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.anything({ maxDepth: 2 }), { maxKeys: 4 }),
);

const part = fc.oneof(
  fc.record({
    type: fc.constantFrom('text', 'image_url', 'tool_use', 'tool_result', 'thinking', 'input_text', 'weird'),
    text: junkValue,
  }),
  junkValue,
);
const message = fc.oneof(
  fc.record(
    {
      role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'model', 'developer', 'function'), junkValue),
      content: fc.oneof(fc.string({ maxLength: 200 }), fc.array(part, { maxLength: 4 }), junkValue),
      tool_calls: fc.oneof(
        fc.constant(undefined),
        fc.array(fc.record({ id: junkValue, type: junkValue, function: junkValue }), { maxLength: 3 }),
      ),
      tool_call_id: fc.oneof(fc.constant(undefined), junkValue),
      parts: fc.oneof(fc.constant(undefined), fc.array(part, { maxLength: 3 })),
      type: fc.oneof(
        fc.constant(undefined),
        fc.constantFrom('message', 'function_call', 'function_call_output', 'reasoning', 'compaction'),
        junkValue,
      ),
    },
    { requiredKeys: [] },
  ),
  junkValue,
);
const body = fc.record(
  {
    messages: fc.oneof(fc.array(message, { maxLength: 8 }), junkValue),
    format: fc.oneof(fc.constantFrom('openai-chat', 'anthropic', 'openai-responses', 'gemini', 'nope'), junkValue),
    keep: fc.oneof(fc.record({ runs: junkValue }), fc.record({ messages: fc.integer({ min: -5, max: 50 }) }), junkValue),
    target_tokens: fc.oneof(fc.integer({ min: -10, max: 100_000 }), junkValue),
    usage: fc.oneof(fc.record({ total_tokens: junkValue, messages_covered: junkValue }), junkValue),
    trigger: junkValue,
    run_ids: junkValue,
    system: junkValue,
    tools: junkValue,
    artifacts: junkValue,
  },
  { requiredKeys: [] },
);
const raw = fc.oneof(
  body.map((b) => JSON.stringify(b) ?? 'null'),
  fc.string({ maxLength: 300 }),
  fc.constantFrom('', '{', '[]', 'null', '{"messages":', '{"__proto__":{"x":1},"messages":[]}', '\u0000\u0001'),
);

t.test('generated hostile requests: never a 5xx, always problem+json, the process stays healthy', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_BODY_LIMIT: '65536' });
  global.gc?.();
  const baseline = process.memoryUsage().heapUsed;
  let requests = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...ENDPOINTS),
      raw,
      fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
      async (url, payload, type) => {
        requests++;
        const res = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': type } });
        if (res.statusCode >= 500)
          throw new Error(`${url} answered ${res.statusCode}: ${res.body.slice(0, 300)} for ${payload.slice(0, 200)}`);
        if (res.statusCode >= 400 && !String(res.headers['content-type']).startsWith('application/problem+json')) {
          throw new Error(`${url} answered ${res.statusCode} without problem+json`);
        }
      },
    ),
    { numRuns: 400 },
  );
  t.ok(requests >= 200, `${requests} hostile requests`);
  const oversized = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(oversized.statusCode, 413);
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'still ready');
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/window',
    payload: { messages: [{ role: 'user', content: 'still serving' }] },
  });
  t.equal(ok.statusCode, 200, 'still serving');
  global.gc?.();
  const after = process.memoryUsage().heapUsed;
  t.ok(
    after < baseline + 64 * 1024 * 1024,
    `heap back near baseline: ${Math.round(baseline / 1e6)} MB → ${Math.round(after / 1e6)} MB`,
  );
});
