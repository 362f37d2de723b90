import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { CORPUS_DIR, loadCorpus } from '../support/corpus.js';
import { schemaErrors } from '../support/schemas.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const shared = resolve(process.env.SHARED_DIR ?? join(root, '..', 'shared'));

t.test('the corpus and the provider schemas live in the repository, with their sources and licences', async (t) => {
  t.equal(CORPUS_DIR, join(root, 'test/fixtures/corpus'), 'the tests read the corpus from the repository');
  const manifest = JSON.parse(readFileSync(join(CORPUS_DIR, 'manifest.json'), 'utf8')) as { file: string; bytes: number }[];
  t.ok(manifest.length >= 27, `${manifest.length} transcripts listed`);
  for (const row of manifest) {
    const path = join(CORPUS_DIR, row.file);
    t.ok(existsSync(path), `${row.file} is here`);
    if (existsSync(path)) t.equal(statSync(path).size, row.bytes, `${row.file} has its listed size`);
  }
  t.equal(loadCorpus().length, manifest.length, 'every listed transcript loads');
  for (const dir of ['test/fixtures/corpus', 'test/fixtures/schemas']) {
    for (const file of ['README.md', 'SOURCE.md']) t.ok(existsSync(join(root, dir, file)), `${dir}/${file}`);
    t.match(readFileSync(join(root, dir, 'README.md'), 'utf8'), /licen[cs]e/i, `${dir}/README.md names the licences`);
  }
  for (const format of ['openai-chat', 'anthropic', 'openai-responses', 'gemini']) {
    t.same(schemaErrors(format, []), [], `the ${format} schema is here and compiles`);
  }
});

t.test(
  'the fixtures match the shared folder they were copied from',
  {
    skip: existsSync(shared) ? false : `no shared folder at ${shared} to compare with (a clone without the workspace beside it)`,
  },
  async (t) => {
    const run = spawnSync(process.execPath, [join(root, 'scripts/fixtures.mjs'), '--check'], {
      env: { ...process.env, SHARED_DIR: shared },
      encoding: 'utf8',
    });
    t.equal(run.stderr, '', 'no fixture missing, differing or left over (node scripts/fixtures.mjs rewrites them)');
    t.equal(run.status, 0, 'scripts/fixtures.mjs --check exits 0');
  },
);
