import t from 'tap';
import { TurnQueue } from '../../src/plugins/load/queue.js';

const iteration = () => new Promise((r) => setImmediate(r));

t.test('one turn per event-loop iteration, in arrival order', async (t) => {
  const turns = new TurnQueue();
  const served: number[] = [];
  for (let i = 0; i < 4; i++) void turns.turn().then(() => served.push(i));
  t.equal(turns.depth, 4);
  for (let n = 1; n <= 4; n++) {
    await iteration();
    t.same(served, [0, 1, 2, 3].slice(0, n), `${n} served after ${n} iterations`);
  }
  t.equal(turns.depth, 0);
  t.equal(turns.oldestWaitMs(), 0);
});

t.test('the oldest wait is measured from the head of the queue', async (t) => {
  let now = 0;
  const turns = new TurnQueue(() => now);
  const first = turns.turn();
  now = 30;
  void turns.turn();
  now = 50;
  t.equal(turns.oldestWaitMs(), 50);
  t.equal(await first, 50, 'the first waited 50 ms');
  t.equal(turns.oldestWaitMs(), 20, 'the next has waited 20');
});

t.test('a long queue drains completely', async (t) => {
  const turns = new TurnQueue();
  const all = Array.from({ length: 3000 }, () => turns.turn());
  await Promise.all(all);
  t.equal(turns.depth, 0);
});

t.test('the expected wait is the queue length times the recent time per turn', async (t) => {
  let now = 0;
  const turns = new TurnQueue(() => now);
  const waiting = Array.from({ length: 5 }, () => turns.turn());
  t.equal(turns.expectedWaitMs(), 0, 'nothing measured yet, nobody has waited');
  for (let i = 0; i < 5; i++) {
    now += 10;
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(waiting);
  const more = Array.from({ length: 4 }, () => turns.turn());
  t.equal(turns.expectedWaitMs(), 4 * 10, '4 waiting × 10 ms');
  now += 100;
  t.equal(turns.expectedWaitMs(), 100, 'or the oldest wait, when longer');
  await Promise.all(more);
});
