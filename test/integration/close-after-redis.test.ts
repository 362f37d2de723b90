import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';

/**
 * Closing the app after its Redis died (issue 36): `app.close()` resolves, and nothing the app
 * opened on Redis is left running (a client reconnecting, BullMQ's lock and stalled-check timers),
 * so a process that closed its app exits by itself. The app runs in a child process of its own
 * (test/support/close-after-redis.ts) on a Redis of the test's own, killed before the close. The
 * deadline is a hang detector, generous for a slow machine: no speed is asserted.
 */

const HANG_MS = 120_000;
const child = fileURLToPath(new URL('../support/close-after-redis.ts', import.meta.url));
const loader = fileURLToPath(new URL('../support/ts-loader.mjs', import.meta.url));

t.test(
  'a process whose Redis was killed closes its app and exits by itself',
  { skip: !hasRedisServer && 'no redis-server' },
  async (t) => {
    const redis = await ownRedis(t);
    const proc = spawn(process.execPath, ['--import', loader, child, redis.url], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = once(proc, 'exit');
    let hung: NodeJS.Timeout | undefined;
    t.teardown(() => {
      clearTimeout(hung);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    });
    const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
    const next = async (): Promise<string | undefined> => (await lines.next()).value;
    t.equal(await next(), 'ready', 'the app was built on the Redis');
    await redis.kill();
    proc.stdin.end('close\n');
    t.equal(await next(), 'closed', 'app.close() resolved after its Redis died');
    const timedOut = new Promise<'hung'>((resolve) => {
      hung = setTimeout(() => resolve('hung'), HANG_MS);
    });
    const outcome = await Promise.race([exited, timedOut]);
    t.not(outcome, 'hung', 'the process exited by itself (nothing left reconnecting or ticking)');
    if (outcome !== 'hung') t.same(outcome, [0, null], 'with exit code 0');
  },
);
