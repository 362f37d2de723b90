// The providers' message schemas in test/fixtures/schemas/, regenerated from the type definitions of
// their newest published SDKs (the request descriptions the providers publish and their own clients
// are checked against), at the versions pinned in test/fixtures/schemas/versions.json.
//   node scripts/provider-schemas.mjs           regenerate the four schemas (npm run schemas)
//   node scripts/provider-schemas.mjs --check   regenerate into a temporary folder and compare byte for byte
// Each SDK tarball comes from the npm registry (`npm pack`) into a cache folder (COMPACTOR_SDK_CACHE,
// default ~/.cache/compactor-sdks) and must match the integrity recorded in versions.json. The
// converter (ts-json-schema-generator with TypeScript, pinned by generator/package-lock.json) is
// installed there with `npm ci`; neither the SDKs nor the converter are dependencies of the project.
// Once the cache holds them, no network is needed. Every change made to the converter's output is a
// numbered, commented step below (README.md beside the schemas lists them).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SCHEMA_DIR = join(root, 'test/fixtures/schemas');
export const MANIFEST = join(SCHEMA_DIR, 'versions.json');
const GENERATOR_DIR = join(SCHEMA_DIR, 'generator');
export const CACHE = resolve(process.env.COMPACTOR_SDK_CACHE ?? join(homedir(), '.cache/compactor-sdks'));

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const sri = (bytes) => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

/** The pinned inputs and recorded outputs. */
export function readManifest() {
  return JSON.parse(readFileSync(MANIFEST, 'utf8'));
}

// ---------------------------------------------------------------------------------------------------
// Inputs: SDK tarballs and the converter, in the cache folder.

/** `npm pack`'s file name for a package version. */
const tarballName = (name, version) => `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;

/** The extracted SDK package folder, fetched and verified first when the cache lacks it. */
function sdkFolder(name, pin) {
  mkdirSync(CACHE, { recursive: true });
  const tgz = join(CACHE, tarballName(name, pin.version));
  if (!existsSync(tgz)) {
    execFileSync('npm', ['pack', `${name}@${pin.version}`, '--pack-destination', CACHE, '--silent'], {
      cwd: CACHE,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  const bytes = readFileSync(tgz);
  if (sri(bytes) !== pin.integrity) {
    throw new Error(`${tgz}: integrity ${sri(bytes)} is not the recorded ${pin.integrity}; delete it to fetch it again`);
  }
  const dir = join(CACHE, tarballName(name, pin.version).replace(/\.tgz$/, ''));
  const marker = join(dir, '.integrity');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== pin.integrity) {
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    execFileSync('tar', ['-xzf', tgz, '-C', tmp]);
    writeFileSync(join(tmp, '.integrity'), pin.integrity);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
  const pkg = JSON.parse(readFileSync(join(dir, 'package/package.json'), 'utf8'));
  if (pkg.name !== name || pkg.version !== pin.version) throw new Error(`${tgz} holds ${pkg.name}@${pkg.version}`);
  if (pkg.license !== pin.license) throw new Error(`${name}@${pin.version} is now licensed ${pkg.license}, not ${pin.license}`);
  return join(dir, 'package');
}

/** The converter's folder in the cache, named after the committed lock file that pins it. */
function converterFolder() {
  return join(CACHE, `generator-${sha256(readFileSync(join(GENERATOR_DIR, 'package-lock.json'))).slice(0, 16)}`);
}

/** Whether the cache already holds every input (then no network is needed). */
export function cacheReady() {
  const manifest = readManifest();
  const tarballs = Object.entries(manifest.packages).every(([name, pin]) => {
    const tgz = join(CACHE, tarballName(name, pin.version));
    return existsSync(tgz) && sri(readFileSync(tgz)) === pin.integrity;
  });
  return tarballs && existsSync(join(converterFolder(), 'node_modules/.package-lock.json'));
}

/** ts-json-schema-generator, installed with `npm ci` from the committed lock file into the cache. */
function converter(manifest) {
  const pins = JSON.parse(readFileSync(join(GENERATOR_DIR, 'package.json'), 'utf8')).dependencies;
  const lock = JSON.parse(readFileSync(join(GENERATOR_DIR, 'package-lock.json'), 'utf8')).packages;
  const gen = manifest.generator;
  const locked = lock[`node_modules/${gen.package}`];
  if (pins[gen.package] !== gen.version || pins.typescript !== gen.typescript || locked?.version !== gen.version) {
    throw new Error('generator/package.json, its package-lock.json and versions.json pin different converters');
  }
  if (locked.integrity !== gen.integrity)
    throw new Error(`${gen.package}@${gen.version}: locked integrity is not the recorded one`);
  const dir = converterFolder();
  const marker = join(dir, 'node_modules/.package-lock.json');
  if (!existsSync(marker)) {
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(GENERATOR_DIR, f), join(tmp, f));
    execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: tmp,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
  const require = createRequire(join(dir, 'package.json'));
  for (const [name, version] of Object.entries(pins)) {
    const got = require(`${name}/package.json`).version;
    if (got !== version) throw new Error(`${dir}: ${name} ${got} installed, ${version} pinned`);
  }
  return require('ts-json-schema-generator');
}

// ---------------------------------------------------------------------------------------------------
// Generic steps, the same for every file.

const COMBINATORS = ['anyOf', 'oneOf', 'allOf'];
const SUBSCHEMA = ['items', 'not', 'additionalProperties', 'contains', 'propertyNames', 'if', 'then', 'else', 'additionalItems'];

/** Calls `visit` on every (sub)schema of `schema`, children first. */
function eachSchema(schema, visit) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions']) {
    if (schema[key]) for (const sub of Object.values(schema[key])) eachSchema(sub, visit);
  }
  for (const key of [...COMBINATORS, 'prefixItems'])
    if (Array.isArray(schema[key])) for (const sub of schema[key]) eachSchema(sub, visit);
  for (const key of SUBSCHEMA) {
    if (Array.isArray(schema[key])) for (const sub of schema[key]) eachSchema(sub, visit);
    else eachSchema(schema[key], visit);
  }
  visit(schema);
}

/**
 * Step 1 (draft-07 → draft 2020-12). The converter writes draft-07: `definitions` become `$defs`, every
 * `$ref` follows, and a tuple's array-form `items` (with `additionalItems`) becomes `prefixItems`
 * (with `items`). Nothing else in its output differs between the two drafts.
 */
function toDraft2020(schema) {
  schema.$defs = schema.definitions;
  delete schema.definitions;
  eachSchema(schema, (s) => {
    if (typeof s.$ref === 'string') s.$ref = s.$ref.replace(/^#\/definitions\//, '#/$defs/');
    if (Array.isArray(s.items)) {
      s.prefixItems = s.items;
      delete s.items;
      if ('additionalItems' in s) {
        s.items = s.additionalItems;
        delete s.additionalItems;
      }
    }
  });
  return schema;
}

/** Step 9: the annotations go (descriptions, deprecation marks, the converter's comments); no rule is in them. */
function stripAnnotations(schema) {
  eachSchema(schema, (s) => {
    for (const key of ['description', 'markdownDescription', 'remarks', 'deprecated', 'examples', 'default', 'title', '$comment'])
      delete s[key];
  });
}

/** Step 10: `$defs` no longer reachable from the root (after the steps that remove fields) go. */
function pruneDefs(schema) {
  const reached = new Set();
  const walk = (s) =>
    eachSchema(s, (sub) => {
      const name = typeof sub.$ref === 'string' && sub.$ref.startsWith('#/$defs/') ? sub.$ref.slice(8) : null;
      if (name && !reached.has(name)) {
        reached.add(name);
        walk(schema.$defs[name]);
      }
    });
  walk({ $ref: schema.$ref });
  for (const name of Object.keys(schema.$defs)) if (!reached.has(name)) delete schema.$defs[name];
}

/** Step 11: one key order everywhere (alphabetical; `required` sorted), so that equal inputs give equal bytes. */
function canonical(value, key) {
  if (Array.isArray(value)) {
    const items = value.map((v) => canonical(v));
    return key === 'required' ? items.sort() : items;
  }
  if (!value || typeof value !== 'object') return value;
  const out = {};
  for (const k of Object.keys(value).sort()) out[k] = canonical(value[k], k);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Steps for the Gemini file. The SDK's types describe both the Gemini API and Vertex AI, with every
// field optional; the doc comments say which apply to the Gemini API and which are required.

/** Part fields that accompany the part's data; every other Part field is a member of oneof `data`. */
const GEMINI_PART_METADATA = [
  'thought',
  'thoughtSignature',
  'videoMetadata',
  'partMetadata',
  'mediaResolution',
  'mediaProcessing',
  'speechMetadata',
  'audioTranscription',
];
const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function geminiRules(schema) {
  const defs = schema.$defs;
  // Step 2: fields and data types whose doc comment says "not supported in Gemini API" are removed: the
  // SDK's own Gemini API converter throws for them (e.g. FunctionCall.partialArgs, willContinue).
  for (const def of Object.values(defs)) {
    for (const [name, prop] of Object.entries(def.properties ?? {})) {
      if (/not supported in Gemini API/.test(prop.description ?? '')) delete def.properties[name];
    }
  }
  // Step 3: a field whose doc comment begins "Required." is required (FunctionResponse.name and
  // .response, FileData.fileUri and .mimeType, Blob.data and .mimeType, ExecutableCode.code and
  // .language, CodeExecutionResult.outcome, …). The SDK types leave every field optional.
  eachSchema(schema, (s) => {
    if (!s.properties) return;
    const required = Object.entries(s.properties)
      .filter(([, p]) => /^\s*Required\./.test(p.description ?? ''))
      .map(([n]) => n);
    if (required.length) s.required = [...new Set([...(s.required ?? []), ...required])];
  });
  // Step 4: Content.role "Must be either 'user' or 'model'" (its doc comment).
  defs.Content.properties.role = { type: 'string', enum: ['user', 'model'] };
  // Step 5: Content.parts is required and not empty: the API answers "contents.parts must not be empty".
  defs.Content.required = ['parts'];
  defs.Content.properties.parts.minItems = 1;
  // Step 6: a Part carries exactly one data field ("Exactly one field within a Part should be set";
  // the API answers "required oneof field 'data' must have one initialized field"). The data fields
  // are the members of the proto's oneof `data`; the metadata fields above accompany them.
  const partFields = Object.keys(defs.Part.properties);
  const unknown = partFields.filter((f) => !GEMINI_PART_METADATA.includes(f) && !isDataField(f));
  if (unknown.length) throw new Error(`classify the new Gemini Part fields as data or metadata: ${unknown.join(', ')}`);
  const data = partFields.filter(isDataField);
  defs.Part.oneOf = data.map((f) => ({ required: [f] }));
  // Step 7: base64 fields ("@remarks Encoded as base64 string" on Blob.data, Part.thoughtSignature, …)
  // must be base64 (standard or URL-safe alphabet, padding optional), as the API decodes them.
  eachSchema(schema, (s) => {
    if (s.type === 'string' && /Encoded as base64 string/.test(s.remarks ?? '')) s.pattern = '^[A-Za-z0-9+/_-]*={0,2}$';
  });
  // Step 8: ProtoJSON. The API parses JSON with the ProtoJSON mapping, whose parsers accept each field
  // under its lowerCamelCase JSON name (the SDK's) and under its proto name (`inline_data`, as in
  // Google's REST examples), but not both at once. Every object field gets its snake_case twin; a
  // requirement is met by either name. Free-form objects (`args`, `response`) are left alone.
  const objects = [];
  eachSchema(schema, (s) => s.properties && objects.push(s));
  for (const object of objects) protoNames(object);
  return schema;
}

const DATA_FIELDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
  'toolCall',
  'toolResponse',
];
function isDataField(f) {
  return DATA_FIELDS.includes(f);
}

/** Step 8 on one object schema: each camelCase field also under its snake_case name, never both. */
function protoNames(def) {
  if (!def.properties) return;
  const twins = Object.keys(def.properties).filter((n) => snake(n) !== n);
  if (!twins.length) return;
  for (const n of twins) def.properties[snake(n)] = def.properties[n];
  const either = (n) => (snake(n) === n ? { required: [n] } : { anyOf: [{ required: [n] }, { required: [snake(n)] }] });
  const allOf = twins.map((n) => ({ not: { required: [n, snake(n)] } }));
  if (def.required) {
    allOf.push(...def.required.filter((n) => snake(n) !== n).map(either));
    def.required = def.required.filter((n) => snake(n) === n);
    if (!def.required.length) delete def.required;
  }
  if (def.oneOf) {
    def.oneOf = def.oneOf.map((s) => either(s.required[0]));
  }
  def.allOf = [...(def.allOf ?? []), ...allOf];
}

// ---------------------------------------------------------------------------------------------------
// The schemas.

/** Format-specific steps (2–8) by file; the generic ones apply to all. */
const RULES = { gemini: geminiRules };

/** One schema: the converter's output and the numbered steps, as the bytes to commit. */
function buildSchema(generator, entry, sdk, pin, manifest) {
  const work = mkdtempSync(join(tmpdir(), 'provider-schemas-'));
  try {
    // The compilation: strict (so `| null` and optional fields are kept as written), no ambient types.
    const tsconfig = join(work, 'tsconfig.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({ compilerOptions: { strict: true, types: [], skipLibCheck: true, target: 'es2022', module: 'nodenext' } }),
    );
    const raw = generator
      .createGenerator({
        path: join(sdk, entry.source),
        tsconfig,
        type: entry.root,
        expose: 'export',
        topRef: true,
        jsDoc: 'extended',
        skipTypeCheck: true,
        encodeRefs: false,
        functions: 'fail',
        sortProps: true,
        // `@remarks Encoded as base64 string.` (the Gemini SDK's mark of bytes fields) is kept for step 7.
        extraTags: ['remarks'],
        // TypeScript object types are open; the converter closes them (additionalProperties: false)
        // unless told otherwise. Closed for Anthropic and Gemini, whose APIs reject unknown fields;
        // open for OpenAI, whose API takes fields its SDK types do not list (Codex sends `id` on
        // input messages). See README.md.
        additionalProperties: entry.openObjects === true,
      })
      .createSchema(entry.root);
    const schema = toDraft2020(JSON.parse(JSON.stringify(raw)));
    RULES[entry.format]?.(schema);
    stripAnnotations(schema);
    pruneDefs(schema);
    const gen = manifest.generator;
    const out = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: entry.id,
      title: entry.title,
      $comment:
        `Generated by scripts/provider-schemas.mjs from ${entry.package}@${pin.version} (npm, ${pin.integrity}), ` +
        `type ${entry.root} in ${entry.source}, with ${gen.package}@${gen.version} and typescript@${gen.typescript}. ` +
        `${pin.license}, ${pin.copyright}; this file is a modified (converted) derivative: the changes are listed in README.md.`,
      $ref: schema.$ref,
      $defs: canonical(schema.$defs),
    };
    return `${JSON.stringify(out, null, 1)}\n`;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every schema file's bytes, and the manifest with their recorded hashes. */
export function generate() {
  const manifest = readManifest();
  const generator = converter(manifest);
  const files = {};
  const sdks = {};
  for (const entry of manifest.schemas) {
    const pin = manifest.packages[entry.package];
    if (!pin) throw new Error(`versions.json pins no version of ${entry.package}`);
    sdks[entry.package] ??= sdkFolder(entry.package, pin);
    const text = buildSchema(generator, entry, sdks[entry.package], pin, manifest);
    files[entry.file] = text;
    entry.bytes = Buffer.byteLength(text);
    entry.defs = Object.keys(JSON.parse(text).$defs).length;
    entry.sha256 = sha256(text);
  }
  // Apache-2.0 §4(a): recipients get a copy of the licence; each package's own LICENSE file (with its
  // copyright notice) is copied as it is.
  for (const [name, dir] of Object.entries(sdks)) {
    files[`licenses/${name.replace(/^@/, '').replace('/', '-')}.LICENSE`] = readFileSync(join(dir, 'LICENSE'), 'utf8');
  }
  files['versions.json'] = `${JSON.stringify(manifest, null, 2)}\n`;
  return files;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let files;
  try {
    files = generate();
  } catch (err) {
    console.error(`scripts/provider-schemas.mjs: ${err instanceof Error ? err.message : err}`);
    process.exit(2);
  }
  if (process.argv.includes('--check')) {
    const tmp = mkdtempSync(join(tmpdir(), 'provider-schemas-check-'));
    let differing = 0;
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(tmp, file)), { recursive: true });
      writeFileSync(join(tmp, file), text);
      const here = join(SCHEMA_DIR, file);
      if (!existsSync(here)) {
        console.error(`test/fixtures/schemas/${file}: missing (npm run schemas writes it)`);
        differing++;
      } else if (!readFileSync(here).equals(readFileSync(join(tmp, file)))) {
        console.error(
          `test/fixtures/schemas/${file}: differs from what scripts/provider-schemas.mjs generates (npm run schemas)`,
        );
        differing++;
      }
    }
    rmSync(tmp, { recursive: true, force: true });
    if (!differing) console.log(`test/fixtures/schemas: all ${Object.keys(files).length} files match their regeneration`);
    process.exit(differing ? 1 : 0);
  }
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(SCHEMA_DIR, file)), { recursive: true });
    writeFileSync(join(SCHEMA_DIR, file), text);
  }
  console.log(`test/fixtures/schemas: wrote ${Object.keys(files).join(', ')}`);
}
