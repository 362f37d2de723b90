import t from 'tap';
import { SingleFlight } from '../../src/summarizers/single-flight.js';

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

t.test('callers with the same key share one run; other keys run apart', async (t) => {
  const flights = new SingleFlight<string>(0);
  let runs = 0;
  const d = deferred<string>();
  const start = () => {
    runs++;
    return d.promise;
  };
  const a = flights.run('k', start);
  const b = flights.run('k', start);
  const c = flights.run('other', async () => 'x');
  t.equal(a.joined, false);
  t.equal(b.joined, true);
  t.equal(c.joined, false);
  d.resolve('v');
  t.same(await Promise.all([a.result, b.result, c.result]), ['v', 'v', 'x']);
  t.equal(runs, 1);
  await new Promise((r) => setImmediate(r));
  t.equal(flights.size, 0, 'nothing lingers with lingerMs 0');
});

t.test('a success lingers for lingerMs; a failure is shared by waiters, then forgotten', async (t) => {
  // Margins wide enough for a loaded CI machine: shared well within 300 ms, gone well after.
  const flights = new SingleFlight<number>(300);
  const first = flights.run('k', async () => 1);
  await first.result;
  await new Promise((r) => setImmediate(r));
  const again = flights.run('k', async () => 2);
  t.equal(again.joined, true, 'shared while lingering');
  t.equal(await again.result, 1);
  await new Promise((r) => setTimeout(r, 400));
  const later = flights.run('k', async () => 3);
  t.equal(later.joined, false, 'gone after lingerMs');
  t.equal(await later.result, 3);

  const d = deferred<number>();
  const x = flights.run('f', () => d.promise);
  const y = flights.run('f', async () => 9);
  d.reject(new Error('boom'));
  await t.rejects(x.result, /boom/);
  await t.rejects(y.result, /boom/, 'the waiter gets the same failure');
  await new Promise((r) => setImmediate(r));
  const z = flights.run('f', async () => 7);
  t.equal(z.joined, false, 'a failure is not remembered');
  t.equal(await z.result, 7);
});

t.test('a start that throws synchronously rejects the flight, it does not throw at the caller', async (t) => {
  const flights = new SingleFlight<number>();
  const f = flights.run('k', () => {
    throw new Error('sync');
  });
  await t.rejects(f.result, /sync/);
});

t.test('lingering entries are bounded', async (t) => {
  const flights = new SingleFlight<number>(10_000, 3);
  for (let i = 0; i < 10; i++) await flights.run(`k${i}`, async () => i).result;
  await new Promise((r) => setImmediate(r));
  t.ok(flights.size <= 3, `at most 3 lingering (${flights.size})`);
  t.equal(flights.run('k9', async () => -1).joined, true, 'the newest is kept');
  t.equal(flights.run('k0', async () => -1).joined, false, 'the oldest was evicted');
});
