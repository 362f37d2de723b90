import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import type { Compactor } from '../../src/service/compactor.js';
import { Preparer } from '../../src/service/prepare.js';
import type { PrepareEvent, PreparerOptions } from '../../src/service/prepared-summaries.js';
import type { PrepareRequest } from '../../src/strategies/types.js';

/**
 * The embedded preparer's own queue (p-queue): one retry after a backoff, none for a request the
 * summarizer refuses, `close` drops waiting jobs and aborts running ones at its deadline. The
 * compactor is a stand-in whose `run` is each test's summarizer; everything else is real.
 */

const usage = { input_tokens: 10, output_tokens: 5, cached_input_tokens: 0, calls: 1, model: 'm', total_tokens: 15 };

function request(id: string): PrepareRequest {
  return { id, prefix: 'p', from: 2, to: 8, body: { messages: [{ role: 'user', content: `range ${id}` }] } };
}

function preparer(run: (signal: AbortSignal) => Promise<unknown>, options: Partial<PreparerOptions> = {}) {
  const events: PrepareEvent[] = [];
  const compactor = {
    callerOfScope: () => ({}),
    run: (_s: unknown, _r: unknown, _o: unknown, call: { signal: AbortSignal }) => run(call.signal).then(() => ({ usage })),
  } as unknown as Compactor;
  const p = new Preparer(compactor, {
    concurrency: 1,
    byDefault: true,
    backoffMs: 10,
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { p, events };
}

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

t.test('a failed attempt is retried once after the backoff; a second failure fails the job', async (t) => {
  let calls = 0;
  const { p, events } = preparer(async () => {
    calls++;
    if (calls < 3) throw new Error('upstream');
  });
  t.teardown(() => p.close(0));
  p.add('s', request('a'));
  await until(async () => (await p.view('s', 'a'))?.state === 'failed' && events.includes('failed'));
  t.equal(calls, 2, 'two attempts');
  t.same(events, ['failed']);
  p.add('s', request('b'));
  await until(async () => (await p.view('s', 'b'))?.state === 'ready');
  t.equal(calls, 3, 'a new job runs once when it succeeds');
  t.same((await p.view('s', 'b'))?.usage, usage);
});

t.test('a request the summarizer refuses is not retried', async (t) => {
  let calls = 0;
  const { p } = preparer(async () => {
    calls++;
    throw new CompactorError('CMP_ERR_OPTIONS_INVALID', 'bad');
  });
  t.teardown(() => p.close(0));
  p.add('s', request('a'));
  await until(async () => (await p.view('s', 'a'))?.state === 'failed');
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(calls, 1);
  t.equal((await p.view('s', 'a'))?.error, 'CMP_ERR_OPTIONS_INVALID');
});

t.test('close drops the waiting jobs and aborts the running one at its deadline', async (t) => {
  let calls = 0;
  let aborted = false;
  const { p } = preparer(
    (signal) =>
      new Promise((_resolve, reject) => {
        calls++;
        signal.addEventListener('abort', () => {
          aborted = true;
          reject(new Error('aborted'));
        });
      }),
  );
  p.add('s', request('a'));
  p.add('s', request('b'));
  await until(async () => (await p.view('s', 'a'))?.state === 'running');
  await p.close(20);
  t.ok(aborted, 'the running job was aborted');
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(calls, 1, 'the waiting one never ran');
  p.add('s', request('c'));
  t.equal(await p.view('s', 'c'), undefined, 'nothing is taken after close');
});

/**
 * `settled`, the wait of a fit that needs a summary being made: with the clock's timers mocked
 * (none fires unless ticked), only the preparer's signal can end it before `ms`: a wait that
 * polled would never see the job end.
 */
async function mockedTimers(t: { teardown: (fn: () => void) => void }) {
  const { mock } = await import('node:test');
  mock.timers.enable({ apis: ['setTimeout'] });
  t.teardown(() => mock.timers.reset());
  return mock.timers;
}

function gated() {
  let release: (fail?: boolean) => void = () => {};
  const gate = new Promise<boolean>((resolve) => {
    release = (fail = false) => resolve(fail);
  });
  return {
    release: (fail?: boolean) => release(fail),
    run: async () => {
      if (await gate) throw new CompactorError('CMP_ERR_OPTIONS_INVALID', 'refused');
    },
  };
}

t.test('settled resolves when the job ends, ready or failed, without a timer firing', async (t) => {
  const ok = gated();
  const { p } = preparer(ok.run);
  t.teardown(() => p.close(0));
  await mockedTimers(t);
  p.add('s', request('a'));
  const ctx = await p.context('s');
  const waiting = ctx.settled?.('a', 60_000);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal((await p.view('s', 'a'))?.state, 'running');
  ok.release();
  t.equal(await waiting, true, 'ready: told at once');
  t.equal(await ctx.settled?.('a', 60_000), true, 'already ready: no wait');
  t.equal(await ctx.settled?.('unknown', 60_000), false, 'unknown: no wait');

  const refused = gated();
  const { p: q } = preparer(refused.run);
  t.teardown(() => q.close(0));
  q.add('s', request('b'));
  const failing = (await q.context('s')).settled?.('b', 60_000);
  refused.release(true);
  t.equal(await failing, false, 'failed for good: told at once');
});

t.test('settled gives up after ms, and when its signal aborts', async (t) => {
  const never = gated();
  const { p } = preparer(never.run);
  t.teardown(() => {
    never.release();
    return p.close(0);
  });
  const timers = await mockedTimers(t);
  p.add('s', request('a'));
  const ctx = await p.context('s');
  let late: boolean | undefined;
  const timed = ctx.settled?.('a', 500).then((ready) => {
    late = ready;
  });
  timers.tick(499);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(late, undefined, 'still waiting before ms');
  timers.tick(1);
  await timed;
  t.equal(late, false, 'false at ms');
  const controller = new AbortController();
  const aborted = ctx.settled?.('a', 60_000, controller.signal);
  controller.abort();
  t.equal(await aborted, false, 'false on abort');
  t.equal(await ctx.settled?.('a', 60_000, controller.signal), false, 'an aborted signal does not wait');
});
