import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';

/**
 * Coverage is gated on the union of the two lanes (scripts/coverage.mjs), not per lane: a lane
 * alone covers less, so its tap run has every threshold at 0 and prints no "ERROR: incomplete …
 * coverage" when it passes, while the union report still fails below package.json's thresholds.
 */
const root = new URL('../../', import.meta.url).pathname;
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  tap: Record<string, unknown>;
};
const THRESHOLDS = ['statements', 'branches', 'functions', 'lines'] as const;
// A tap run inside this test must not think it is one of this run's children.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP') && !k.startsWith('_TAP')));

t.test('each lane runs tap with every threshold at 0; package.json keeps the union thresholds', async (t) => {
  for (const lane of ['test', 'test:system']) {
    const runs = (manifest.scripts[lane] ?? '').split('&&').filter((part) => /^\s*tap (?!build)/.test(part));
    t.equal(runs.length, 1, `${lane} runs tap once`);
    for (const th of THRESHOLDS) t.match(runs[0], ` --${th}=0 `, `${lane}: per-lane ${th} is not the gate`);
    t.notMatch(runs[0], /allow-incomplete-coverage/, `${lane}: no flag that hides a failed gate`);
    t.match(manifest.scripts[lane], `node scripts/coverage.mjs save ${lane === 'test' ? 'fast' : 'system'}`);
  }
  for (const th of THRESHOLDS) t.ok(Number(manifest.tap[th]) >= 90, `the union's ${th} threshold is ${manifest.tap[th]}`);
});

/** A project with one module, `covered` of whose two functions ran: its V8 coverage saved as both lanes. */
function project(t: Test, callBoth: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-coverage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const thresholds = Object.fromEntries(THRESHOLDS.map((th) => [th, manifest.tap[th]]));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'probe', private: true, type: 'module', tap: { ...thresholds, 'coverage-report': ['text-summary'] } }),
  );
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(
    join(dir, 'mod.mjs'),
    `export function used(x) {\n  return x + 1;\n}\nexport function other(x) {\n  const y = x * 2;\n  return y - 1;\n}\nused(1);\n${callBoth ? 'other(1);\n' : ''}`,
  );
  const fast = join(dir, '.tap/lanes/fast');
  mkdirSync(fast, { recursive: true });
  const ran = spawnSync(process.execPath, ['mod.mjs'], { cwd: dir, env: { ...env, NODE_V8_COVERAGE: fast } });
  t.equal(ran.status, 0, 'the module ran under V8 coverage');
  cpSync(fast, join(dir, '.tap/lanes/system'), { recursive: true });
  return dir;
}

function report(dir: string) {
  const out = spawnSync(process.execPath, [join(root, 'scripts/coverage.mjs'), 'report', '--root', dir], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: out.status, text: `${out.stdout}${out.stderr}` };
}

t.test('the union report fails below the thresholds and says so', async (t) => {
  const { status, text } = report(project(t, false));
  t.equal(status, 1, 'the gate fails');
  t.match(text, /ERROR: incomplete functions coverage \(50%\)/);
});

t.test('the union report passes when the union is covered', async (t) => {
  const { status, text } = report(project(t, true));
  t.equal(status, 0, `the gate passes${status ? `: ${text.slice(0, 400)}` : ''}`);
  t.notMatch(text, /ERROR: incomplete/);
});
