import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
// @ts-expect-error: a plain ES module script without types
import { render } from '../../scripts/readme-options.mjs';
import { freePort } from '../support/net.js';

/**
 * The README runs as written: every shell block that talks to the service is run against a freshly
 * started one (`node dist/server.js` on its defaults, from the repository's root, as a reader
 * would), and where a ```text block follows, each of its lines must appear in what the block
 * printed, in order (a JSON line as a subset of the printed one). Its option tables are the ones
 * the schemas generate (its troubleshooting tables are the catalogue's: test/unit/docs.test.ts).
 */
const root = new URL('../../', import.meta.url).pathname;
const readme = readFileSync(join(root, 'README.md'), 'utf8');

interface Block {
  line: number;
  script: string;
  expected?: string[];
}

/** The README's runnable shell blocks (those addressing the service), each with its expected output. */
function blocks(): Block[] {
  const out: Block[] = [];
  const fence = /```(\w*)\n([\s\S]*?)```/g;
  let prev: Block | undefined;
  let prevEnd = 0;
  for (let m = fence.exec(readme); m; m = fence.exec(readme)) {
    const [whole, lang, body = ''] = m;
    const between = readme.slice(prevEnd, m.index);
    if (lang === 'text' && prev && between.trim() === '') prev.expected = body.trimEnd().split('\n');
    prev = undefined;
    if (lang === 'sh' && body.includes('localhost:8080')) {
      const block: Block = { line: readme.slice(0, m.index).split('\n').length, script: body };
      out.push(block);
      prev = block;
    }
    prevEnd = m.index + whole.length;
  }
  return out;
}

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

t.test('every README shell block addressing the service runs and prints what the README says', async (t) => {
  if (!hasTools) {
    t.fail('the README examples need curl and jq on PATH (.ci/run installs them)');
    return;
  }
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
  const found = blocks();
  t.ok(found.length >= 8, `${found.length} runnable blocks`);
  for (const block of found) {
    const script = `set -eo pipefail\n${block.script.replaceAll('localhost:8080', `localhost:${port}`)}`;
    const run = spawnSync('bash', ['-c', script], { cwd: root, encoding: 'utf8', timeout: 300_000 });
    const where = `README.md:${block.line}`;
    t.equal(run.status, 0, `${where} exits 0${run.status ? `: ${run.stderr.slice(0, 300)}` : ''}`);
    t.notMatch(run.stdout, /CMP_ERR_/, `${where} answers no error`);
    if (block.expected) {
      const missing = matches(block.expected, run.stdout.split('\n'));
      t.equal(
        missing,
        undefined,
        `${where} prints the lines the README shows${missing ? `; got:\n${run.stdout.slice(0, 600)}` : ''}`,
      );
    }
  }
});

t.test('the option tables are the ones the schemas generate', async (t) => {
  const doc = JSON.parse(readFileSync(join(root, 'openapi/openapi.json'), 'utf8'));
  t.equal(render(readme, doc), readme, 'run `node scripts/readme-options.mjs` after changing a schema');
  t.match(readme, /<!-- options:\/v1\/fit -->/);
});

t.test('the README links nothing outside the repository', async (t) => {
  t.notMatch(readme, /\]\(\.\.\//, 'no relative link out of the repository');
  t.notMatch(readme, /`\.\.\/shared\//, 'no path into ../shared');
  execFileSync('node', [join(root, 'scripts/readme-options.mjs'), '--check'], { cwd: root });
});
