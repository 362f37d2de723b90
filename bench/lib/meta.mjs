/** What a benchmark run records about itself: machine, Node, commit, compiled code, load. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A hash of every compiled file the benchmark loads: tells whether dist/ changed during the run. */
export function distHash() {
  const h = createHash('sha1');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory()) walk(`${dir}/${e.name}`);
      else if (e.name.endsWith('.js')) h.update(e.name).update(readFileSync(`${dir}/${e.name}`));
    }
  };
  walk(`${ROOT}dist`);
  return h.digest('hex').slice(0, 12);
}

/** A git command's output in the repository, or 'unknown' (no git, or no .git in an exported tree). */
export function git(args) {
  try {
    return execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The 1, 5 and 15 minute load averages, to two decimals. */
export const loadavg = () => os.loadavg().map((x) => Number(x.toFixed(2)));

/** The commit: BENCH_COMMIT when running in a tree exported from it (git archive, no .git there). */
export const commit = () => process.env.BENCH_COMMIT ?? git(['rev-parse', '--short', 'HEAD']);

/** The fields every HTTP benchmark records at its start. */
export function runMeta() {
  return {
    date: new Date().toISOString(),
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    commit: commit(),
    src_dirty: process.env.BENCH_COMMIT ? false : git(['status', '--porcelain', '--', 'src']).length > 0,
    dist_hash: distHash(),
    loadavg_start: loadavg(),
  };
}
