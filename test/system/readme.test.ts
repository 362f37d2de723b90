import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import t, { type Test } from 'tap';
// @ts-expect-error: a plain ES module script without types
import { render } from '../../scripts/readme-options.mjs';
import { DOC_FILES, figureHolds, readDoc, root, type Step, steps } from '../support/docs.js';
import { freePort } from '../support/net.js';

/**
 * The docs run as written: every shell block of the README and of docs/ that talks to the service
 * is run against a freshly started one (`node dist/server.js` on its defaults, from the
 * repository's root, as a reader would), file by file in document order, and where a ```text
 * block follows, each of its lines must appear in what the block printed, in order (a JSON line as
 * a subset of the printed one). A figure stated in prose is checked the same way
 * (`<!-- figure … -->`, test/support/docs.ts). The option tables are the ones the schemas generate
 * (the tables of codes and variables: test/unit/docs.test.ts).
 */

/** Whether `want` is contained in `got`: equal scalars, objects key by key, arrays item by item. */
function subset(want: unknown, got: unknown): boolean {
  if (Array.isArray(want)) return Array.isArray(got) && want.length === got.length && want.every((w, i) => subset(w, got[i]));
  if (want && typeof want === 'object') {
    if (!got || typeof got !== 'object') return false;
    return Object.entries(want).every(([k, v]) => subset(v, (got as Record<string, unknown>)[k]));
  }
  return Object.is(want, got);
}

function parse(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** Whether every expected line appears among the printed ones, in order. */
function matches(expected: string[], printed: string[]): string | undefined {
  let at = 0;
  for (const want of expected) {
    const wantJson = parse(want);
    const found = printed.findIndex((got, i) => {
      if (i < at) return false;
      if (wantJson !== undefined && typeof wantJson === 'object') return subset(wantJson, parse(got));
      return got.trim() === want.trim();
    });
    if (found < 0) return want;
    at = found + 1;
  }
  return undefined;
}

const hasTools = ['curl', 'jq'].every((bin) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0);

async function startService(t: Test): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'compactor-readme-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      COMPACTOR_STORE_URL: `sqlite:${dataDir}/compactor.db`,
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let ready = false;
  // Polled to a generous deadline (120 s): a slow or busy machine starts the service late, not never.
  for (let i = 0; i < 1200 && !ready; i++) {
    ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (!ready) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(ready, 'the service started');
  return port;
}

function run(step: Step, port: number) {
  const script = `set -eo pipefail\n${step.script.replaceAll('localhost:8080', `localhost:${port}`)}`;
  return spawnSync('bash', ['-c', script], { cwd: root, encoding: 'utf8', timeout: 300_000 });
}

t.test('every shell block of the docs addressing the service runs and prints what the docs say', async (t) => {
  if (!hasTools) {
    t.fail('the docs examples need curl and jq on PATH (.ci/run installs them)');
    return;
  }
  const port = await startService(t);
  const all = DOC_FILES.map((file) => ({ file, steps: steps(readDoc(file)) }));
  const blocks = all.flatMap((d) => d.steps.filter((s) => s.kind === 'block'));
  const figures = all.flatMap((d) => d.steps.filter((s) => s.kind === 'figure'));
  t.ok(blocks.length >= 8, `${blocks.length} runnable blocks`);
  t.ok(figures.length >= 2, `${figures.length} figures in prose`);
  t.ok(
    all.find((d) => d.file === 'README.md')?.steps.some((s) => s.kind === 'block'),
    'the README itself runs at least one block',
  );
  for (const { file, steps: list } of all) {
    for (const step of list) {
      const where = `${file}:${step.line}`;
      const out = run(step, port);
      t.equal(out.status, 0, `${where} exits 0${out.status ? `: ${out.stderr.slice(0, 300)}` : ''}`);
      t.notMatch(out.stdout, /CMP_ERR_/, `${where} answers no error`);
      if (step.kind === 'figure') {
        t.ok(
          figureHolds(step, out.stdout),
          `${where}: the prose says ${step.written}${step.tolerance ? ` (±${step.tolerance}%)` : ''}, the service printed ${out.stdout.trim()}`,
        );
      } else if (step.expected) {
        const missing = matches(step.expected, out.stdout.split('\n'));
        t.equal(
          missing,
          undefined,
          `${where} prints the lines the docs show${missing ? `; got:\n${out.stdout.slice(0, 600)}` : ''}`,
        );
      }
    }
  }
});

t.test('the option tables are the ones the schemas generate', async (t) => {
  const doc = JSON.parse(readFileSync(join(root, 'openapi/openapi.json'), 'utf8'));
  for (const file of DOC_FILES) {
    const text = readDoc(file);
    t.equal(render(text, doc), text, `${file}: run \`node scripts/readme-options.mjs\` after changing a schema`);
  }
  t.match(readDoc('docs/api.md'), /<!-- options:\/v1\/fit -->/);
  t.match(readDoc('docs/fit.md'), /<!-- description:\/v1\/fit -->/);
  execFileSync('node', [join(root, 'scripts/readme-options.mjs'), '--check'], { cwd: root });
});

t.test('the docs link nothing outside the repository, and every relative link resolves', async (t) => {
  for (const file of DOC_FILES) {
    const text = readDoc(file);
    t.notMatch(text, /`\.\.\/shared\//, `${file}: no path into ../shared`);
    for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
      const path = resolve(root, dirname(file), target.split('#')[0] ?? '');
      t.notOk(relative(root, path).startsWith('..'), `${file}: ${target} stays inside the repository`);
      t.ok(existsSync(path), `${file}: ${target} exists`);
    }
  }
});
