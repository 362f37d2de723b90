import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { freePort } from './net.js';

/** Whether `redis-server` can be started here; fault tests that need one of their own skip otherwise. */
export const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

/**
 * A Redis of one test's own, without persistence, on a free port: a test may pause it (SIGSTOP),
 * flush it or kill it without touching the shared one. Stopped (SIGKILL, after a SIGCONT) when the
 * test ends.
 */
export interface OwnRedis {
  readonly url: string;
  readonly port: number;
  /** SIGSTOP: the process keeps its connections open and answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL, resolved once the process has exited (a Redis that is gone: connections refused). */
  kill(): Promise<void>;
  /** A client of the test's own (closed when the test ends), to look at keys or FLUSHALL. */
  client(): Redis;
}

/** Starts one and waits until it answers PING (a generous deadline: a hang detector, not a speed limit). */
export async function ownRedis(t: Pick<Test, 'teardown'>): Promise<OwnRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const clients: Redis[] = [];
  t.teardown(async () => {
    for (const c of clients) c.disconnect();
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  });
  const url = `redis://127.0.0.1:${port}/0`;
  const client = (): Redis => {
    const c = new Redis(url, { maxRetriesPerRequest: 1 });
    c.on('error', () => {});
    clients.push(c);
    return c;
  };
  const probe = client();
  const end = Date.now() + 30_000;
  for (;;) {
    const ok = await probe.ping().then(
      (r) => r === 'PONG',
      () => false,
    );
    if (ok) break;
    if (Date.now() > end) throw new Error(`redis-server on port ${port} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    port,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
    client,
  };
}
