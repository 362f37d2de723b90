import fc from 'fast-check';
import t from 'tap';
import { MAX_SLOTS, type Slots, slotOf, withSlot } from '../../src/tokens/by-tag.js';

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
