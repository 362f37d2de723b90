import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { TRAIL_CLASSES } from '../../src/contract/parts.js';
import { renderTrail, Trail, trailOf } from '../../src/summarizers/trail.js';

/**
 * The trail's budget, for any trail and any budget: the estimate stays within it, nothing
 * vanishes uncounted, output is deterministic, and a fold of nothing new is a fixed point.
 */

type Op =
  | { kind: 'file'; op: 'read' | 'written' | 'modified' | 'deleted' | 'mentioned'; path: string }
  | { kind: 'item'; cls: 'urls' | 'errors' | 'tests' | 'commands' | 'constraints'; item: string };

/** Paths from a small alphabet, so that one is often another's end (`docs/a.md`, `./docs/a.md`). */
const path = fc
  .tuple(
    fc.constantFrom('', './', '/testbed/'),
    fc.array(fc.constantFrom('src', 'docs', 'a', 'pkg'), { maxLength: 3 }),
    fc.constantFrom('x.py', 'a.md', 'util.py', 'long_module_name.py'),
  )
  .map(([root, dirs, file]) => `${root}${[...dirs, file].join('/')}`);

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('file' as const),
    op: fc.constantFrom('read', 'written', 'modified', 'deleted', 'mentioned'),
    path,
  }),
  fc.record({
    kind: fc.constant('item' as const),
    cls: fc.constantFrom('urls', 'errors', 'tests', 'commands', 'constraints'),
    item: fc.oneof(
      path.map((p) => `https://example.org/${p}`),
      fc.integer({ min: 0, max: 50 }).map((n) => `KeyError: ${n}`),
      fc.integer({ min: 0, max: 50 }).map((n) => `\`make step_${n}\` → exit ${n % 2}`),
    ),
  }),
);

function build(ops: readonly Op[]): Trail {
  const tr = new Trail();
  for (const o of ops) {
    if (o.kind === 'file') tr.file(o.path, o.op);
    else tr.add(o.cls, o.item);
  }
  return tr;
}

const estimate = (item: string) => Math.ceil((item.length + 2) / 3);

t.test('any trail, any budget: bounded, counted, deterministic, a fixed point under folding', async () => {
  await fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 0, max: 400 }), (ops, budget) => {
      const tr = build(ops);
      const { text, counts } = renderTrail(tr, '', budget);
      assert.equal(renderTrail(build(ops), '', budget).text, text, 'deterministic');
      // Within the budget, as estimated: 12 for the heading and the last line, 3 a class, each item.
      const listed = trailOf(text).trail;
      let used = 12;
      for (const cls of TRAIL_CLASSES) {
        const items = listed.items(cls);
        if (items.length > 0) used += 3 + items.reduce((n, item) => n + estimate(item), 0);
      }
      if (text !== '') assert.ok(used <= Math.max(budget, 12), `estimated ${used} over ${budget}`);
      // Every item is in the text verbatim, or counted as left out.
      for (const cls of TRAIL_CLASSES) {
        const missing = tr.items(cls).filter((item) => !text.includes(item)).length;
        const count = counts.find((c) => c.class === cls);
        assert.ok(missing <= (count?.left_out ?? 0), `${cls}: ${missing} missing, ${count?.left_out} left out`);
        if (count) assert.equal(count.found, count.appended + count.left_out, `${cls}: found = appended + left out (no prose)`);
      }
      // A fold that adds nothing changes nothing.
      assert.equal(renderTrail(listed, '', budget).text, text, 'fixed point');
    }),
    { numRuns: 300 },
  );
});
