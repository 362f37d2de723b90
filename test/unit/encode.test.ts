import fc from 'fast-check';
import { serializerCompiler } from 'fastify-type-provider-zod';
import t from 'tap';
import { z } from 'zod';
import { Problem } from '../../src/schemas/common.js';
import { fastSerializerCompiler, utf8Bytes } from '../../src/schemas/encode.js';
import { Compactor } from '../../src/service/compactor.js';
import { OPERATIONS, type OperationUrl } from '../../src/service/operations.js';
import { MemoryStore } from '../../src/store/memory.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadCorpus } from '../support/corpus.js';

/** What a serializer gives: the bytes, or the error it throws (name and message). */
function outcome(serialize: (data: unknown) => string, data: unknown): string {
  try {
    return `ok ${serialize(data)}`;
  } catch (error) {
    const e = error as Error;
    return `error ${e.name}: ${e.message}`;
  }
}

function pair(schema: z.ZodType, url = '/v1/test') {
  const route = { schema, method: 'POST', url } as Parameters<typeof serializerCompiler>[0];
  return { fast: fastSerializerCompiler(route), slow: serializerCompiler(route) as (data: unknown) => string };
}

const CASES: [OperationUrl, Record<string, unknown>][] = [
  ['/v1/window', { keep: { messages: 20 } }],
  ['/v1/window', { keep: { runs: 1 }, dry_run: true }],
  ['/v1/compact', {}],
  ['/v1/compact', { keep_tool_uses: 1, store: 'inline', target_tokens: 20_000 }],
  ['/v1/summarize', { keep: { messages: 10 } }],
  ['/v1/fit', { target_tokens: 8000, policy: 'tokens' }],
  ['/v1/fit', { target_fraction: 0.6, context_window: 32_000 }],
  ['/v1/tokens', {}],
  ['/v1/validate', {}],
];

/** Answers of every corpus transcript to each case (a sample of the operations' real answers). */
async function answers(): Promise<[OperationUrl, unknown][]> {
  const out: [OperationUrl, unknown][] = [];
  for (const transcript of loadCorpus()) {
    const compactor = new Compactor(new TokenCounter(100_000), { store: new MemoryStore(), secret: 's'.repeat(40) });
    const caller = compactor.caller(null);
    for (const [url, options] of CASES) {
      const op = OPERATIONS[url];
      const body = { messages: transcript.messages, format: transcript.format, ...options };
      const { value } = await op.perform(compactor, body, { signal: AbortSignal.timeout(120_000), caller });
      out.push([url, value]);
    }
  }
  return out;
}

/** A copy of `value` with one thing changed at a random place: a key removed, replaced or added. */
function mutate(value: unknown, pick: number[], replacement: unknown, mode: number): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let node: unknown = copy;
  for (const p of pick) {
    if (typeof node !== 'object' || node === null) break;
    const keys = Object.keys(node);
    if (keys.length === 0) break;
    const key = keys[p % keys.length] as string;
    const child = (node as Record<string, unknown>)[key];
    if (typeof child !== 'object' || child === null || p % 3 === 0) {
      const target = node as Record<string, unknown>;
      if (mode === 0) delete target[key];
      else if (mode === 1) target[key] = replacement;
      else target[`${key}_extra`] = replacement;
      return copy;
    }
    node = child;
  }
  return copy;
}

t.test('every answer of every corpus transcript serializes to the same bytes', async (t) => {
  const all = await answers();
  const serializers = new Map<OperationUrl, ReturnType<typeof pair>>();
  let same = 0;
  for (const [url, value] of all) {
    if (!serializers.has(url)) serializers.set(url, pair(OPERATIONS[url].response, url));
    const { fast, slow } = serializers.get(url) as ReturnType<typeof pair>;
    const a = fast(value);
    if (a === slow(value)) same++;
    else t.fail(`${url}: the bytes differ`);
  }
  t.equal(same, all.length, `${all.length} answers`);

  // Answers changed at random places: the same bytes, or the same refusal.
  const odd = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(undefined, null, Number.NaN, Number.POSITIVE_INFINITY, -0, 1.5, 2 ** 60, '', [], {}, true, 'exact'),
  );
  const sample = all.filter((_, i) => i % 7 === 0);
  fc.assert(
    fc.property(
      fc.nat(sample.length - 1),
      fc.array(fc.nat(1000), { minLength: 1, maxLength: 6 }),
      odd,
      fc.nat(2),
      (i, path, replacement, mode) => {
        const [url, value] = sample[i] as [OperationUrl, unknown];
        const { fast, slow } = serializers.get(url) as ReturnType<typeof pair>;
        const changed = mutate(value, path, replacement, mode);
        return outcome(fast, changed) === outcome(slow, changed);
      },
    ),
    { numRuns: 3000 },
  );
});

t.test('problems, and schemas the encoders leave to zod, serialize to the same bytes or refusal', async (t) => {
  const problem = pair(Problem);
  const given = {
    type: 'urn:x',
    title: 'T',
    status: 400,
    detail: 'd',
    code: 'C',
    request_id: 'r',
    errors: [{ path: 'p', message: 'm', x: 1 }],
  };
  t.equal(outcome(problem.fast, given), outcome(problem.slow, given));
  t.equal(outcome(problem.fast, { ...given, status: 400.5 }), outcome(problem.slow, { ...given, status: 400.5 }));
  const other = pair(
    z.object({
      a: z.string().min(2).optional(),
      b: z.union([z.string(), z.number()]),
      c: z.number().default(3).optional(),
      d: z.looseObject({ x: z.int() }),
      e: z.strictObject({ y: z.boolean() }).nullable(),
      f: z.email().optional(),
      g: z
        .string()
        .transform((s) => s.length)
        .optional(),
      h: z.array(z.enum(['p', 'q'])).max(2),
      i: z.record(z.string(), z.unknown()).optional(),
    }),
  );
  const base = { a: 'ab', b: 1, d: { x: 1, z: 2 }, e: { y: true }, f: 'a@b.co', h: ['p'], i: { k: 1 }, extra: 1 };
  fc.assert(
    fc.property(fc.constantFrom(...Object.keys(base), 'c', 'g'), fc.jsonValue({ maxDepth: 2 }), (key, v) => {
      const changed = { ...base, [key]: v };
      return outcome(other.fast, changed) === outcome(other.slow, changed);
    }),
    { numRuns: 2000 },
  );
  t.equal(outcome(other.fast, base), outcome(other.slow, base));

  // A schema that contains itself.
  const Node = z.object({
    name: z.string(),
    get children() {
      return z.array(Node).optional();
    },
  });
  const tree = pair(Node);
  const value = { name: 'a', x: 1, children: [{ name: 'b', children: [{ name: 'c', y: 2 }] }, { name: 'd' }] };
  t.equal(outcome(tree.fast, value), outcome(tree.slow, value));
  const bad = { name: 'a', children: [{ name: 'b', children: [{ name: 3 }] }] };
  t.equal(outcome(tree.fast, bad), outcome(tree.slow, bad));
});

t.test('utf8Bytes gives the UTF-8 bytes of any text, ASCII or not', async (t) => {
  for (const text of [
    '',
    'plain ascii {"a":1}',
    'é',
    'ü and ascii',
    '😀',
    '\u0080',
    '\u00ff',
    '\ud800 lone',
    `${'x'.repeat(5000)}é`,
  ]) {
    t.same(utf8Bytes(text), Buffer.from(text, 'utf8'), JSON.stringify(text.slice(0, 20)));
  }
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (text) => utf8Bytes(text).equals(Buffer.from(text, 'utf8'))),
    { numRuns: 2000 },
  );
});
