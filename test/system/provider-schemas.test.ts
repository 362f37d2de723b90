import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';

/**
 * The drift check of the provider schemas: scripts/provider-schemas.mjs regenerates them from the SDK
 * tarballs pinned in test/fixtures/schemas/versions.json (fetched with `npm pack` into its cache
 * folder, verified against the recorded integrity) and compares byte for byte with the committed
 * files. Skipped only where the cache lacks an input and the npm registry cannot be reached.
 */
const root = new URL('../../', import.meta.url).pathname;
const script = join(root, 'scripts/provider-schemas.mjs');

function skipReason(): string | false {
  const cached = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { cacheReady, CACHE } from ${JSON.stringify(script)}; console.log(CACHE); process.exit(cacheReady() ? 0 : 1);`,
    ],
    { encoding: 'utf8' },
  );
  if (cached.status === 0) return false;
  const ping = spawnSync('npm', ['ping', '--loglevel=error'], { encoding: 'utf8', timeout: 30_000 });
  if (ping.status === 0) return false;
  return `the cache (${cached.stdout.trim() || 'unknown'}) lacks a pinned SDK or the converter, and the npm registry does not answer`;
}

t.test('the committed provider schemas are what the pinned SDKs generate', { skip: skipReason() }, async (t) => {
  const run = spawnSync(process.execPath, [script, '--check'], { cwd: root, encoding: 'utf8', timeout: 600_000 });
  t.equal(run.stderr, '', 'no schema differs (npm run schemas regenerates them)');
  t.equal(run.status, 0, 'scripts/provider-schemas.mjs --check exits 0');
  t.match(
    run.stdout,
    /all 8 files match their regeneration/,
    'the four schemas, the three licences and versions.json were compared',
  );
});
