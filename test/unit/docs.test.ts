import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CONFIG_DOCS, ConfigSchema } from '../../src/config.js';
import { ERRORS } from '../../src/errors.js';

const root = new URL('../../', import.meta.url).pathname;
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const envExample = readFileSync(join(root, '.env.example'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

t.test('every error code is documented in the README with its status', async (t) => {
  for (const [code, { status }] of Object.entries(ERRORS)) {
    t.match(readme, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), code);
  }
});

t.test('every CMP_ERR code used in src is in the catalogue, and every catalogued code is used', async (t) => {
  const text = sources(join(root, 'src'))
    .filter((f) => f !== join(root, 'src', 'errors.ts'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  // A code ending in `_` is a prefix test (`startsWith('CMP_ERR_SUMMARIZER_')`), not a code.
  const used = new Set((text.match(/CMP_ERR_[A-Z_]+/g) ?? []).filter((c) => !c.endsWith('_')));
  for (const code of used) t.ok(code in ERRORS, `${code} is catalogued`);
  for (const code of Object.keys(ERRORS)) t.ok(used.has(code), `${code} is raised somewhere`);
});

t.test('every configuration variable is documented in the README and .env.example', async (t) => {
  const defaults = ConfigSchema.parse({});
  for (const key of Object.keys(ConfigSchema.shape) as (keyof typeof CONFIG_DOCS)[]) {
    const raw = defaults[key];
    const shown = raw === undefined ? 'unset' : `\`${Array.isArray(raw) ? raw.join(',') : raw}\``;
    const doc = CONFIG_DOCS[key].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    t.match(readme, new RegExp(`\\| \`${key}\` \\| ${doc} \\| ${shown} \\|`), key);
    t.match(envExample, new RegExp(`^#? ?${key}=`, 'm'), `${key} in .env.example`);
  }
});
