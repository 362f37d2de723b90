import fc from 'fast-check';
import t from 'tap';
import { ByTag, MAX_SLOTS, type Slots, slotOf, withSlot } from '../../src/tokens/by-tag.js';

t.test('slots keep the newest value of the newest MAX_SLOTS selectors, and never change a list in place', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), fc.integer()), { maxLength: 30 }), (ops) => {
      let slots: Slots<number> | undefined;
      const order: string[] = [];
      const latest = new Map<string, number>();
      for (const [selector, value] of ops) {
        const before = slots ? [...slots] : undefined;
        const next = withSlot(slots, selector, value);
        if (before && slots && JSON.stringify(before) !== JSON.stringify(slots)) return false;
        slots = next;
        order.splice(order.indexOf(selector) >>> 0, order.includes(selector) ? 1 : 0);
        order.push(selector);
        latest.set(selector, value);
      }
      const kept = order.slice(-MAX_SLOTS);
      if ((slots?.length ?? 0) !== 2 * kept.length) return false;
      for (const s of order) if (slotOf(slots, s) !== (kept.includes(s) ? latest.get(s) : undefined)) return false;
      return slotOf(slots, 'z') === undefined;
    }),
    { numRuns: 500 },
  );
  t.equal(slotOf(undefined, 'a'), undefined);
});

t.test('ByTag finds each value under its tag and selector, within its bytes, the oldest tags out first', async (t) => {
  // Each entry: a 4-character tag and 2 selectors of 1 character, values of 10 characters: (4 + 2 × 11) × 2 + 2 × 8 = 68 bytes.
  const cache = new ByTag<string>(68 * 10, (v) => v.length, 8);
  for (let i = 0; i < 5; i++) {
    cache.set(`t${String(i).padStart(3, '0')}`, 'a', `a-${i}`.padEnd(10, '.'));
    cache.set(`t${String(i).padStart(3, '0')}`, 'b', `b-${i}`.padEnd(10, '.'));
  }
  t.equal(cache.get('t003', 'a'), 'a-3'.padEnd(10, '.'));
  t.equal(cache.get('t003', 'b'), 'b-3'.padEnd(10, '.'));
  t.equal(cache.get('t003', 'c'), undefined, 'another selector: nothing');
  t.equal(cache.get('t009', 'a'), undefined, 'another tag: nothing');
  // Past the bound the least recently used tags leave, by halves.
  for (let i = 5; i < 40; i++) cache.set(`t${String(i).padStart(3, '0')}`, 'a', `a-${i}`.padEnd(10, '.'));
  t.equal(cache.get('t000', 'a'), undefined, 'an old tag left');
  t.equal(cache.get('t039', 'a'), 'a-39'.padEnd(10, '.'), 'the newest kept');
});
