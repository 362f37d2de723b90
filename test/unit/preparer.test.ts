import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import type { Compactor } from '../../src/service/compactor.js';
import { type PrepareEvent, Preparer, type PreparerOptions } from '../../src/service/prepare.js';
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
