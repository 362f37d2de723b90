import fc from 'fast-check';
import t from 'tap';
import { Generations } from '../../src/tokens/generations.js';

t.test('two generations: what was used in the last half of the bound stays', async (t) => {
  const cache = new Generations<number>(10);
  for (let i = 0; i < 5; i++) cache.set(`k${i}`, i);
  t.equal(cache.size, 5);
  cache.set('k5', 5); // the young generation was full: it ages
  t.equal(cache.get('k0'), 0, 'an aging entry is found, and moves back');
  for (let i = 6; i < 10; i++) cache.set(`k${i}`, i);
  t.equal(cache.get('k0'), 0, 'used again: still there');
  t.equal(cache.get('k1'), undefined, 'not used since it aged twice: gone');
  cache.set('k0', 100);
  t.equal(cache.get('k0'), 100, 'a set replaces');
  t.ok(cache.size <= 10);
});

t.test('property: never more than the bound, and every value found is the last set', async () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 40 }),
      fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 1, max: 6 }))),
      (max, ops) => {
        const cache = new Generations<number>(max, (_key, value) => value);
        const last = new Map<string, number>();
        for (const [isSet, k, v] of ops) {
          const key = `k${k}`;
          if (isSet) {
            cache.set(key, v);
            last.set(key, v);
          } else {
            const got = cache.get(key);
            if (got !== undefined && got !== last.get(key)) throw new Error(`${key}: ${got} against ${last.get(key)}`);
          }
          if (cache.calculatedSize > max) throw new Error(`${cache.calculatedSize} over ${max}`);
        }
      },
    ),
  );
});
