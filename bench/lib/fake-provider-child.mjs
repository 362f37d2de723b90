/**
 * The repository's fake model provider (test/support/fake-provider.ts) in a process of its own, for
 * bench/proxy.mjs: so that neither the benchmark's client nor the proxy shares its event loop.
 * Started by `startFakeProvider()` (below, in the parent) as
 * `node --import ./test/support/ts-loader.mjs bench/lib/fake-provider-child.mjs`, over an IPC channel.
 *
 * What it answers: a request with `x-bench-bytes: N` gets a streamed text of N bytes (the fake's
 * `LargeText`, generated as it is written, never held); any other a short text. Usage is the fake's
 * own (characters / 4, its prompt-cache simulation per conversation).
 *
 * IPC: the child sends `{url}` once listening; `{op: 'records', since}` answers `{op: 'records',
 * records}` (each request's seq, path, status, usage, cache report and timing: no bodies, no
 * headers), `{op: 'forget'}` empties its record (`{op: 'forgotten'}`), so that a long run does not
 * hold every body it received.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

/** The parent's handle: the fake's URL, its records, forget, stop; `pid` for its RSS. */
export async function startFakeProvider() {
  const child = fork(SELF, ['--child'], {
    cwd: ROOT,
    execArgv: ['--import', './test/support/ts-loader.mjs'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m.url));
    child.once('exit', (code) => reject(new Error(`fake provider exited with ${code}`)));
  });
  const ask = (message, answer) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m.op !== answer) return;
        child.off('message', on);
        resolve(m);
      };
      child.on('message', on);
      child.send(message);
    });
  return {
    url,
    pid: child.pid,
    records: async (since = 0) => (await ask({ op: 'records', since }, 'records')).records,
    forget: () => ask({ op: 'forget' }, 'forgotten'),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

if (process.argv.includes('--child')) {
  const { FakeProvider } = await import('../../test/support/fake-provider.ts');
  const scenario = (request) => {
    const bytes = Number(request.headers['x-bench-bytes'] ?? 0);
    return bytes > 0 ? { text: { bytes } } : { text: 'Done: the logs have 42 lines in all.' };
  };
  const fake = await new FakeProvider({ scenario }).start();
  process.on('message', (m) => {
    if (m.op === 'records') {
      const records = fake.requests.slice(m.since).map((r) => ({
        seq: r.seq,
        path: r.path,
        endpoint: r.endpoint,
        status: r.status,
        usage: r.usage,
        cache: r.cache,
        timing: r.timing,
      }));
      process.send({ op: 'records', records });
    } else if (m.op === 'forget') {
      fake.requests.length = 0;
      fake.cache.clear();
      process.send({ op: 'forgotten' });
    }
  });
  process.on('SIGTERM', async () => {
    await fake.stop();
    process.exit(0);
  });
  process.send({ url: fake.url });
}
