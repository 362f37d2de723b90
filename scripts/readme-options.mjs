// The option tables of the docs (README.md, CONTRIBUTING.md and docs/*.md; today they live in
// docs/api.md, and fit's description in docs/fit.md), generated from the committed OpenAPI document
// (itself generated from the zod schemas the service validates with), between markers of the form
//   <!-- options:/v1/fit --> … <!-- /options -->   (one endpoint's own fields)
//   <!-- options:common --> … <!-- /options -->    (the fields every strategy endpoint shares)
//   <!-- options:objects --> … <!-- /options -->   (the shared objects those fields name)
//   <!-- description:/v1/fit --> … <!-- /description -->   (an endpoint's description, as Swagger shows it)
// `node scripts/readme-options.mjs` rewrites every such file; `--check` exits 1 when one is out of
// date (test/system/readme.test.ts runs the same comparison).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const COMMON = ['messages', 'format', 'system', 'tools', 'model', 'context_window', 'usage', 'run_ids', 'trigger', 'dry_run'];
const OBJECTS = ['Trigger', 'ReportedUsage', 'Keep', 'CompactRule', 'Pricing', 'CacheSettings', 'Horizon'];

function schemas(doc) {
  return doc.components?.schemas ?? {};
}

function resolve(doc, s) {
  if (s?.$ref) return schemas(doc)[s.$ref.split('/').pop()] ?? {};
  return s ?? {};
}

/** A short type for a table cell: a named object, an enum, a union, an array of … */
function typeOf(doc, s) {
  if (s.$ref)
    return `\`${s.$ref
      .split('/')
      .pop()
      .replace(/Input$/, '')}\``;
  if (s.enum) return s.enum.map((v) => `\`${JSON.stringify(v)}\``).join(', ');
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  const union = s.anyOf ?? s.oneOf;
  if (union) return [...new Set(union.map((u) => typeOf(doc, u)))].join(' or ');
  if (s.type === 'array') return s.items && Object.keys(s.items).length ? `array of ${typeOf(doc, s.items)}` : 'array';
  if (s.type === 'integer' || s.type === 'number') {
    const lo = s.minimum ?? s.exclusiveMinimum;
    const hi = s.maximum !== undefined && s.maximum < 9007199254740991 ? s.maximum : undefined;
    const range =
      lo !== undefined && hi !== undefined
        ? ` ${lo}–${hi}`
        : lo !== undefined
          ? s.exclusiveMinimum !== undefined
            ? ` > ${lo}`
            : ` ≥ ${lo}`
          : '';
    return `${s.type}${range}`;
  }
  return s.type ?? 'any';
}

const cell = (text) =>
  String(text ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');

function rows(doc, object, only, skip = []) {
  const props = object.properties ?? {};
  const required = new Set(object.required ?? []);
  const names = Object.keys(props).filter((n) => (only ? only.includes(n) : !skip.includes(n)));
  const out = ['| field | type | default | meaning |', '|---|---|---|---|'];
  for (const name of names) {
    const raw = props[name];
    const s = raw.$ref ? { ...resolve(doc, raw), ...raw } : raw;
    const def = raw.default !== undefined ? `\`${JSON.stringify(raw.default)}\`` : required.has(name) ? 'required' : '';
    const description = raw.description ?? resolve(doc, raw).description ?? '';
    out.push(`| \`${name}\` | ${cell(typeOf(doc, raw.$ref ? raw : s))} | ${cell(def)} | ${cell(description)} |`);
  }
  return out.join('\n');
}

function requestSchema(doc, path) {
  const op = doc.paths?.[path]?.post;
  return resolve(doc, op?.requestBody?.content?.['application/json']?.schema);
}

function named(doc, name) {
  return schemas(doc)[name] ?? schemas(doc)[`${name}Input`];
}

/** The generated text for one marker. */
export function table(doc, key) {
  if (key === 'common') return rows(doc, requestSchema(doc, '/v1/fit'), COMMON);
  if (key === 'objects') {
    return OBJECTS.filter((n) => named(doc, n))
      .map(
        (n) =>
          `**\`${n}\`**${named(doc, n).description ? `: ${cell(named(doc, n).description)}` : ''}\n\n${rows(doc, named(doc, n))}`,
      )
      .join('\n\n');
  }
  const s = requestSchema(doc, key);
  if (!s.properties) throw new Error(`no request schema for ${key}`);
  return rows(doc, s, undefined, COMMON);
}

/** An endpoint's description, as its route gives it to the OpenAPI document. */
export function description(doc, path) {
  const text = doc.paths?.[path]?.post?.description;
  if (!text) throw new Error(`no description for ${path}`);
  return text;
}

/** The documentation files, relative to the repository's root: the README first, then docs/ in name order. */
export function docFiles(rootUrl = root) {
  const docs = readdirSync(new URL('docs/', rootUrl))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', 'CONTRIBUTING.md', ...docs];
}

/** A document's text with every marked table and description regenerated. */
export function render(readme, doc) {
  return readme
    .replace(
      /(<!-- options:(\S+) -->\n)[\s\S]*?(<!-- \/options -->)/g,
      (_, open, key, close) => `${open}${table(doc, key)}\n${close}`,
    )
    .replace(
      /(<!-- description:(\S+) -->\n)[\s\S]*?(<!-- \/description -->)/g,
      (_, open, key, close) => `${open}${description(doc, key)}\n${close}`,
    );
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const doc = JSON.parse(readFileSync(new URL('openapi/openapi.json', root), 'utf8'));
  const stale = [];
  for (const file of docFiles()) {
    const url = new URL(file, root);
    const text = readFileSync(url, 'utf8');
    const next = render(text, doc);
    if (next === text) continue;
    stale.push(file);
    if (!process.argv.includes('--check')) writeFileSync(url, next);
  }
  if (process.argv.includes('--check') && stale.length > 0) {
    console.error(`option tables out of date in ${stale.join(', ')}: run node scripts/readme-options.mjs`);
    process.exit(1);
  } else if (stale.length > 0) {
    console.log(`option tables updated in ${stale.join(', ')}`);
  }
}
