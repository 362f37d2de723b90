import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../net.js';

/** The repository's root (where `dist/` is built). */
export const ROOT = new URL('../../../', import.meta.url).pathname;

/** A Compactor service started from a build, as a user starts it (`node dist/server.js`). */
export interface Service {
  base: string;
  child: ChildProcess;
  /** Its log so far (stdout and stderr, the last 2 MB): JSON lines at `info`. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Whether the build declares a configuration name in its `config*.js` (a newer build may; an
 * older one refuses unknown `COMPACTOR_*` names at boot, so a name it lacks is not passed).
 */
export function buildKnows(dist: string, name: string): boolean {
  if (!existsSync(dist)) return false;
  const declared = new RegExp(`(^|[^A-Z_])'?${name}'?\\s*:`, 'm');
  return readdirSync(dist)
    .filter((f) => /^config.*\.js$/.test(f))
    .some((f) => declared.test(readFileSync(join(dist, f), 'utf8')));
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * Starts `node <dist>/server.js` on a free port with `env` (and only PATH from this process),
 * waits until `/health/ready` answers (a bound for a hang only: 120 s), and returns its handle.
 */
export async function startService(env: Record<string, string>, dist = join(ROOT, 'dist')): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(dist, 'server.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.length > 2_000_000) out = out.slice(-1_000_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, delay(10_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null)
      throw new Error(`compactor exited with ${child.exitCode} before it was ready: ${out.slice(-2000)}`);
    const ok = await fetch(`${base}/health/ready`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) break;
    if (i >= 1200) {
      await stop();
      throw new Error(`compactor was not ready in 120 s: ${out.slice(-2000)}`);
    }
    await delay(100);
  }
  return { base, child, log: () => out, stop };
}
