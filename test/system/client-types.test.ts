import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// clients/typescript ships generated types and a committed build; both must follow their sources.
const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = join(root, 'clients/typescript');
const bin = (name: string) => join(root, 'node_modules', name);

t.test(
  'clients/typescript/src/openapi.ts is what openapi-typescript makes of openapi/openapi.json (run `npm run client:build`)',
  async (t) => {
    const generated = execFileSync(
      process.execPath,
      [
        bin('openapi-typescript/bin/cli.js'),
        'openapi/openapi.json',
        '--empty-objects-unknown',
        '--default-non-nullable',
        'false',
      ],
      { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const committed = readFileSync(join(pkg, 'src/openapi.ts'), 'utf8');
    t.ok(committed.includes('"/v1/fit"') && committed.includes('FitResponse'), 'the committed types describe the API');
    t.equal(committed, generated, 'no drift between openapi/openapi.json and the client types');
    const script = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts['client:types'];
    t.match(script, '--empty-objects-unknown --default-non-nullable false', 'the script generates with the same flags');
  },
);

t.test(
  'clients/typescript/dist and dist/cjs are the builds of clients/typescript/src (run `npm run client:build`)',
  async (t) => {
    for (const [config, into] of [
      ['tsconfig.json', 'dist'],
      ['tsconfig.cjs.json', 'dist/cjs'],
    ] as const) {
      const out = mkdtempSync(join(tmpdir(), 'compactor-client-dist-'));
      t.teardown(() => rmSync(out, { recursive: true, force: true }));
      execFileSync(process.execPath, [bin('typescript/bin/tsc'), '-p', join(pkg, config), '--outDir', out], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const built = readdirSync(out).sort();
      t.same(built, ['index.d.ts', 'index.js', 'openapi.d.ts', 'openapi.js']);
      const committed = readdirSync(join(pkg, into), { withFileTypes: true })
        .filter((e) => e.isFile() && e.name !== 'package.json')
        .map((e) => e.name)
        .sort();
      t.same(committed, built, `the same files are committed in ${into}`);
      for (const file of built) {
        t.equal(
          readFileSync(join(pkg, into, file), 'utf8'),
          readFileSync(join(out, file), 'utf8'),
          `${into}/${file} is up to date`,
        );
      }
    }
    const marker = JSON.parse(readFileSync(join(pkg, 'dist/cjs/package.json'), 'utf8'));
    t.same(marker, { type: 'commonjs' }, 'dist/cjs is read as CommonJS');
    t.match(
      readFileSync(join(pkg, 'dist/cjs/index.js'), 'utf8'),
      /exports\.CompactorClient = CompactorClient/,
      'with CommonJS exports',
    );
  },
);

t.test('the client package has no runtime dependencies', async (t) => {
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  t.equal(manifest.name, '@compactor/client');
  t.equal(manifest.dependencies, undefined);
  t.equal(manifest.peerDependencies, undefined);
  t.equal(manifest.scripts?.prepare, undefined, 'nothing to build on install: dist/ is committed');
  const js = readFileSync(join(pkg, 'dist/index.js'), 'utf8');
  t.same(js.match(/^import .*$/gm) ?? [], [], 'dist/index.js imports nothing');
});
