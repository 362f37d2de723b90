import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';
import { listen } from '../support/net.js';

// @compactor/client installs into an empty project the three ways a user would: from a packed
// tarball, from a path, from a git URL; it brings nothing with it, and plain node imports it.
const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = join(root, 'clients/typescript');
// The npm_* variables of an enclosing `npm test` would point a nested npm at this repository.
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
const npm = (cwd: string, ...args: string[]) => run('npm', args, { cwd, env, timeout: 300_000 });

function emptyProject(t: Test, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `compactor-client-${name}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `probe-${name}`, private: true, type: 'module' }));
  return dir;
}

const probe = `
import { CompactorClient, CompactorHttpError } from '@compactor/client';
const client = new CompactorClient({ baseUrl: process.env.BASE });
const health = await client.health();
const counted = await client.tokens({ messages: [{ role: 'user', content: 'hello there' }] });
const missing = await client.artifact('art_0123456789abcdef01234567').catch((e) => e);
console.log(JSON.stringify({ health, format: counted.format, total: counted.total, missing: missing instanceof CompactorHttpError && missing.status }));
`;

async function importAndCall(t: Test, dir: string, base: string, how: string): Promise<void> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: dir, env: { ...env, BASE: base } });
  const answer = JSON.parse(stdout);
  t.same(answer.health, { status: 'ready' }, `${how}: plain node imports it and calls health`);
  t.equal(answer.format, 'openai-chat', `${how}: tokens answered`);
  t.ok(answer.total > 0);
  t.equal(answer.missing, 404, `${how}: errors are CompactorHttpError`);
}

t.test('installs from a path, a packed tarball (offline) and a git URL, with no dependencies', async (t) => {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:' }), { logger: pino({ level: 'silent' }) });
  t.teardown(() => app.close());
  const { base } = await listen(app);

  await t.test('npm pack, then npm install --offline of the tarball', async (t) => {
    const packs = mkdtempSync(join(tmpdir(), 'compactor-client-pack-'));
    t.teardown(() => rmSync(packs, { recursive: true, force: true }));
    const { stdout } = await npm(pkg, 'pack', '--pack-destination', packs, '--json');
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    t.ok(packed, 'packed');
    if (!packed) return;
    t.ok(packed.files.some((f) => f.path === 'dist/index.js') && packed.files.some((f) => f.path === 'dist/index.d.ts'));
    const dir = emptyProject(t, 'tarball');
    await npm(dir, 'install', '--offline', '--no-audit', '--no-fund', join(packs, packed.filename));
    t.same(
      readdirSync(join(dir, 'node_modules')).filter((n) => !n.startsWith('.')),
      ['@compactor'],
      'one package installed',
    );
    t.notOk(existsSync(join(dir, 'node_modules/@compactor/client/node_modules')), 'with nothing of its own');
    for (const heavy of ['fastify', 'better-sqlite3', 'zod', 'openai']) t.notOk(existsSync(join(dir, 'node_modules', heavy)));
    await importAndCall(t, dir, base, 'tarball');
    // A TypeScript user gets the types through the package's exports.
    writeFileSync(
      join(dir, 'use.ts'),
      `import { CompactorClient, type FitResponse } from '@compactor/client';
const client = new CompactorClient({ baseUrl: 'http://127.0.0.1:8080', retries: 1 });
const fitted: FitResponse<{ role: string; content: string }> = await client.fit({ messages: [{ role: 'user', content: 'x' }], target_tokens: 10 });
const n: number = fitted.tokens.after + fitted.messages.length;
// @ts-expect-error: the request is typed from the OpenAPI document
await client.fit({ messages: [], target_tokens: 'ten' });
export { n };
`,
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--target',
      'es2022',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      'use.ts',
    ];
    await t.resolves(run(process.execPath, [tsc, ...args], { cwd: dir }), 'a TypeScript project type-checks against it');
  });

  await t.test('npm install <path>', async (t) => {
    const dir = emptyProject(t, 'path');
    await npm(dir, 'install', '--offline', '--no-audit', '--no-fund', pkg);
    await importAndCall(t, dir, base, 'path');
  });

  await t.test("npm install 'git+file:///…#main' of a repository holding the package", async (t) => {
    const repo = mkdtempSync(join(tmpdir(), 'compactor-client-repo-'));
    t.teardown(() => rmSync(repo, { recursive: true, force: true }));
    cpSync(pkg, repo, { recursive: true, filter: (src) => !src.includes('node_modules') });
    const git = (...args: string[]) =>
      run('git', ['-c', 'user.name=ci', '-c', 'user.email=ci@localhost', ...args], { cwd: repo });
    await git('init', '-q', '-b', 'main');
    await git('add', '-A');
    await git('commit', '-q', '-m', 'client');
    const dir = emptyProject(t, 'git');
    await npm(dir, 'install', '--offline', '--no-audit', '--no-fund', `git+file://${repo}#main`);
    t.notOk(existsSync(join(dir, 'node_modules/@compactor/client/node_modules')), 'nothing built or installed on the way');
    await importAndCall(t, dir, base, 'git');
  });

  await t.test(
    'the README snippet runs as pasted in a fresh `npm init -y` project (CommonJS), and require loads it',
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'compactor-client-init-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      await npm(dir, 'init', '-y');
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      t.not(manifest.type, 'module', `npm init -y writes a CommonJS project (type: ${manifest.type ?? 'unset'})`);
      await npm(dir, 'install', '--offline', '--no-audit', '--no-fund', pkg);
      const readme = readFileSync(join(root, 'clients/README.md'), 'utf8');
      const snippet = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
      t.ok(snippet?.includes("from '@compactor/client'"), 'clients/README.md shows the TypeScript snippet');
      writeFileSync(join(dir, 'fit.ts'), snippet ?? '');
      const tsx = join(root, 'node_modules/tsx/dist/cli.mjs');
      const { stdout } = await run(process.execPath, [tsx, 'fit.ts'], { cwd: dir, env: { ...env, COMPACTOR_URL: base } });
      const lines = stdout.trim().split('\n');
      t.match(lines[0], /^(true|false) \S+ \d+ -> \d+$/, `fit answered: ${lines[0]}`);
      t.equal(lines[1], '404 CMP_ERR_ARTIFACT_NOT_FOUND', 'errors are CompactorHttpError');
      const required = await run(
        process.execPath,
        ['-e', "const c = require('@compactor/client'); console.log(typeof c.CompactorClient, typeof c.CompactorHttpError)"],
        { cwd: dir, env },
      );
      t.equal(required.stdout.trim(), 'function function', 'require() loads the CommonJS build');
      const imported = await run(
        process.execPath,
        ['--input-type=module', '-e', "import { CompactorClient } from '@compactor/client'; console.log(typeof CompactorClient)"],
        { cwd: dir, env },
      );
      t.equal(imported.stdout.trim(), 'function', 'import loads the ESM build');
    },
  );
});
