// The test fixtures that come from the workspace's shared folder: the corpus of real agent transcripts,
// copied into test/fixtures/corpus with its licences and sources (its README.md is the shared folder's
// own, naming every file's source, commit and licence), so that no test, benchmark or example reads
// outside the repository. The providers' message schemas (test/fixtures/schemas) are no longer copied
// from there: scripts/provider-schemas.mjs generates them from the providers' SDKs.
//   node scripts/fixtures.mjs           copy ../shared (or SHARED_DIR) into test/fixtures/
//   node scripts/fixtures.mjs --check   exit 1 when a fixture is missing or differs from ../shared
// test/unit/fixtures.test.ts runs the same comparison.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SHARED = resolve(process.env.SHARED_DIR ?? join(root, '..', 'shared'));

/** Each fixture folder: where it comes from in the shared folder, and where it lives here. */
export const SETS = [{ from: 'corpus/real', to: 'test/fixtures/corpus' }];

/** Every file under `dir`, relative to it, sorted. */
export function walk(dir, base = dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path, base));
    else out.push(relative(base, path));
  }
  return out.sort();
}

const SOURCE = (from) => `# Where these files come from

Copied unchanged by \`node scripts/fixtures.mjs\` from the workspace's \`shared/${from}\` folder; a
test (\`test/unit/fixtures.test.ts\`) fails when one is missing here and, where that folder exists
beside the repository, when one differs from it. \`README.md\` beside this file is that folder's own:
it names every file's source repository, commit, path and licence, with the copyright and permission
notices and attributions their licences ask for. Do not edit these files by hand.
`;

/** Differences between the shared folder and the fixtures: missing here, differing, or gone there. */
export function drift() {
  const problems = [];
  for (const set of SETS) {
    const src = join(SHARED, set.from);
    const dest = join(root, set.to);
    const theirs = walk(src);
    const ours = existsSync(dest) ? walk(dest).filter((f) => f !== 'SOURCE.md') : [];
    for (const file of theirs) {
      const here = join(dest, file);
      if (!existsSync(here)) problems.push(`${set.to}/${file}: missing`);
      else if (!readFileSync(here).equals(readFileSync(join(src, file)))) problems.push(`${set.to}/${file}: differs`);
    }
    for (const file of ours) if (!theirs.includes(file)) problems.push(`${set.to}/${file}: not in shared/${set.from}`);
  }
  return problems;
}

function copy() {
  for (const set of SETS) {
    const src = join(SHARED, set.from);
    const dest = join(root, set.to);
    for (const file of walk(src)) {
      mkdirSync(dirname(join(dest, file)), { recursive: true });
      // The shared folder is read-only; the copies are ordinary files of the repository.
      if (existsSync(join(dest, file))) chmodSync(join(dest, file), 0o644);
      copyFileSync(join(src, file), join(dest, file));
      chmodSync(join(dest, file), 0o644);
    }
    writeFileSync(join(dest, 'SOURCE.md'), SOURCE(set.from));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!existsSync(SHARED)) {
    console.error(`no shared folder at ${SHARED} (set SHARED_DIR)`);
    process.exit(2);
  }
  if (process.argv.includes('--check')) {
    const problems = drift();
    for (const p of problems) console.error(p);
    process.exit(problems.length ? 1 : 0);
  }
  copy();
  const left = drift();
  console.log(left.length ? left.join('\n') : 'test/fixtures/corpus matches shared/');
}
