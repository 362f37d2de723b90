// Coverage on the union of the two test lanes: the gate. Each lane's tap run starts by clearing
// .tap/coverage, so each lane keeps its own copy when it passes, and the report merges them:
//   node scripts/coverage.mjs save fast|system   copy .tap/coverage to .tap/lanes/<lane>
//   node scripts/coverage.mjs report             merge every saved lane into .tap/coverage and run
//                                                `tap report`, which fails below the thresholds in
//                                                package.json ("tap": statements, branches, …)
// `npm test` and `npm run test:system` save; `npm run coverage` reports (after both). One lane alone
// covers less than the union, so the lanes run tap with every threshold at 0 (package.json's scripts):
// a passing lane prints its summary, not an "ERROR: incomplete … coverage" that is no error.
// `--root <dir>` works on another project's .tap (test/unit/coverage-gate.test.ts).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--root');
const root = at >= 0 ? resolve(args.splice(at, 2)[1] ?? '.') : repo;
const coverage = join(root, '.tap/coverage');
const lanes = join(root, '.tap/lanes');
const [command, lane] = args;

if (command === 'save' && (lane === 'fast' || lane === 'system')) {
  rmSync(join(lanes, lane), { recursive: true, force: true });
  if (existsSync(coverage)) cpSync(coverage, join(lanes, lane), { recursive: true });
} else if (command === 'report') {
  const saved = existsSync(lanes) ? readdirSync(lanes) : [];
  for (const name of ['fast', 'system']) {
    if (!saved.includes(name)) console.error(`# no coverage saved by the ${name} lane: run it first`);
  }
  rmSync(coverage, { recursive: true, force: true });
  mkdirSync(coverage, { recursive: true });
  for (const name of saved) cpSync(join(lanes, name), coverage, { recursive: true });
  const tap = spawnSync(join(repo, 'node_modules/.bin/tap'), ['report', 'text-summary'], { cwd: root, stdio: 'inherit' });
  process.exit(saved.length === 2 ? (tap.status ?? 1) : 1);
} else {
  console.error('usage: node scripts/coverage.mjs save fast|system | report');
  process.exit(2);
}
