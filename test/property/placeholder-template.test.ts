import fc from 'fast-check';
import t from 'tap';
import { BUILT_IN_RULES, DEFAULT_PLACEHOLDER, render } from '../../src/strategies/compact-rules.js';

/**
 * Placeholder templates are read once and filled many times (`render` keeps each template's holes).
 * The oracle is the reading they replaced: one regular-expression replace per fill.
 */
function oracle(
  template: string,
  vars: { tool: string; id: string | null; tokens: number; args: Record<string, unknown> | undefined },
): string {
  const renderValue = (value: unknown) => {
    const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
    return text.length > 200 ? `${text.slice(0, 197)}...` : text;
  };
  return template.replace(/\{([^{}]+)\}/g, (whole, body: string) => {
    for (const alt of body.split('|').map((s) => s.trim())) {
      if (alt.startsWith('"') && alt.endsWith('"') && alt.length >= 2) return alt.slice(1, -1);
      if (alt === 'tool') return vars.tool;
      if (alt === 'id') return vars.id ?? 'none';
      if (alt === 'tokens') return String(vars.tokens);
      if (alt.startsWith('args.')) {
        const name = alt.slice('args.'.length);
        const value = vars.args !== undefined && Object.hasOwn(vars.args, name) ? vars.args[name] : undefined;
        if (value !== undefined && value !== null && value !== '') return renderValue(value);
        continue;
      }
      return whole;
    }
    return 'unknown';
  });
}

/** Template pieces: holes of every kind (known, unknown, fallbacks, spaces), stray braces and bars, text. */
const piece = fc.oneof(
  fc.constantFrom(
    '{tool}',
    '{id}',
    '{tokens}',
    '{args.path}',
    '{ args.path | "a file" }',
    '{args.missing|args.path}',
    '{args.missing}',
    '{args.q|"none"|tool}',
    '{nope}',
    '{nope|tool}',
    '{ nope | tool }',
    '{args.toString}',
    '{args.__proto__|"p"}',
    '{"}',
    '{""}',
    '{}',
    '{{tool}}',
    '{',
    '}',
    '|',
    '"',
    ' ',
  ),
  fc.string({ maxLength: 6 }),
);
const template = fc.oneof(
  fc.array(piece, { maxLength: 12 }).map((parts) => parts.join('')),
  fc.constantFrom(DEFAULT_PLACEHOLDER, ...BUILT_IN_RULES.map((r) => r.placeholder)),
);
const args = fc.option(
  fc.record(
    {
      path: fc.oneof(fc.string({ maxLength: 250 }), fc.constant(''), fc.constant(null), fc.integer(), fc.array(fc.integer())),
      q: fc.string({ maxLength: 8 }),
      file_path: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const vars = fc.record({
  tool: fc.string({ maxLength: 8 }),
  id: fc.option(fc.constant('art_0123456789abcdef01234567'), { nil: null }),
  tokens: fc.nat(100_000),
  args,
});

t.test('a template read once fills as the regular-expression reading did', async (t) => {
  fc.assert(
    fc.property(template, vars, vars, (tpl, a, b) => {
      // The same template filled twice (the second from what the first read), with other values.
      t.equal(render(tpl, a), oracle(tpl, a));
      t.equal(render(tpl, b), oracle(tpl, b));
    }),
    { numRuns: 2000 },
  );
});
