import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ConfigSchema } from '../../src/config.js';
import { CONFIG_DOCS } from '../../src/config-docs.js';
import { REASONS, WARNINGS } from '../../src/contract/codes.js';
import { ERRORS } from '../../src/errors.js';
import { Compactor } from '../../src/service/compactor.js';
import { OPERATIONS, type OperationUrl } from '../../src/service/operations.js';
import { MemoryStore } from '../../src/store/memory.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadConverted } from '../support/convert.js';
import { loadCorpus } from '../support/corpus.js';
import { DOC_FILES, docWith, figureHolds, readDoc, root, steps } from '../support/docs.js';

/**
 * Where each table lives (the README is the front page; the reference is under docs/). A row added
 * to one of these tables goes in the file named here.
 */
const HOME = {
  errors: 'docs/api.md',
  codes: 'docs/api.md',
  configuration: 'docs/configuration.md',
  metrics: 'docs/operations.md',
  endpoints: 'README.md',
} as const;
const errorsDoc = readDoc(HOME.errors);
const configDoc = readDoc(HOME.configuration);
const readme = readDoc(HOME.endpoints);
const envExample = readFileSync(join(root, '.env.example'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

t.test(`every error code is documented in ${HOME.errors} with its status`, async (t) => {
  for (const [code, { status }] of Object.entries(ERRORS)) {
    t.match(errorsDoc, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), code);
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

/**
 * The table of `file` under the header line `header`, by the code in its first cell: the second
 * cell (what the code means). Throws when the table is not there.
 */
function codeTable(file: string, header: string): Map<string, string> {
  const lines = readDoc(file).split('\n');
  const start = lines.indexOf(header);
  if (start < 0) throw new Error(`no table headed ${header} in ${file}`);
  const rows = new Map<string, string>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [, code = '', meaning = ''] = line.split('|').map((cell) => cell.trim());
    rows.set(code.replace(/^`(.*)`$/, '$1'), meaning);
  }
  return rows;
}

for (const [what, header, catalogue] of [
  ['warning', '| warning `code` | what it means |', WARNINGS],
  ['reason', '| `reason` | what it means | what to do |', REASONS],
] as const) {
  t.test(`every ${what} code is in ${HOME.codes}'s table with its meaning, and the table lists no other`, async (t) => {
    const rows = codeTable(HOME.codes, header);
    for (const [code, meaning] of Object.entries(catalogue)) t.equal(rows.get(code), meaning, code);
    for (const code of rows.keys()) t.ok(Object.hasOwn(catalogue, code), `${code} is catalogued`);
  });
}

/** Option sets that make the strategies warn and give reasons (no LLM: the extractive summarizer). */
const CODE_CASES: [OperationUrl, Record<string, unknown>][] = [
  ['/v1/window', { keep: { tokens: 500 } }],
  ['/v1/window', { keep: { messages: 1000 } }],
  ['/v1/window', { keep: { messages: 7 }, trigger: { tokens: 1_000_000 } }],
  ['/v1/compact', { keep_tool_uses: 1, clear_thinking: { keep_turns: 0 }, target_tokens: 100 }],
  ['/v1/compact', { clear_at_least: 1_000_000 }],
  ['/v1/compact', { clear_at_least: 'auto', horizon: { calls: 1 } }],
  ['/v1/summarize', { keep: { messages: 10 }, dry_run: true }],
  ['/v1/summarize', { keep: { messages: 10 }, trail_tokens: 4000 }],
  ['/v1/fit', { target_tokens: 2000, policy: 'tokens', min_saving_fraction: 0.5 }],
  ['/v1/fit', { target_tokens: 2000, horizon: { calls: 1 } }],
  ['/v1/fit', { target_tokens: 1_000_000 }],
];

t.test('every code real responses carry is in the catalogue, and the response schemas accept them', async (t) => {
  const unknownPart = [
    { role: 'user', content: [{ type: 'x_note', text: 'a part type no provider documents' }] },
    { role: 'assistant', content: 'noted' },
  ];
  const transcripts = [
    ...loadCorpus().slice(0, 4),
    ...loadConverted().slice(0, 2),
    { file: 'unknown part', format: 'openai-chat', messages: unknownPart },
  ];
  const compactor = new Compactor(new TokenCounter(10_000), {
    store: new MemoryStore(),
    secret: 'codes-0123456789abcdef0123456789',
  });
  const caller = compactor.caller(null);
  const warnings = new Set<string>();
  const reasons = new Set<string>();
  for (const transcript of transcripts) {
    for (const [url, options] of CODE_CASES) {
      const op = OPERATIONS[url];
      const body = op.body.parse({ messages: transcript.messages, format: transcript.format, ...options });
      const { value } = await op.perform(compactor, body, { signal: AbortSignal.timeout(60_000), caller });
      const checked = op.response.safeParse(value);
      t.ok(checked.success, `${transcript.file} ${url} ${JSON.stringify(options)}: the response schema accepts it`);
      const v = value as { reason?: string; warnings: { code: string }[]; stages?: { reason?: string }[] };
      for (const w of v.warnings) warnings.add(w.code);
      for (const reason of [v.reason, ...(v.stages ?? []).map((s) => s.reason)]) if (reason) reasons.add(reason);
    }
  }
  for (const code of warnings) t.ok(Object.hasOwn(WARNINGS, code), `warning ${code} is catalogued`);
  for (const code of reasons) t.ok(Object.hasOwn(REASONS, code), `reason ${code} is catalogued`);
  t.comment(`seen: warnings ${[...warnings].sort().join(', ')}; reasons ${[...reasons].sort().join(', ')}`);
  t.ok(warnings.size >= 8 && reasons.size >= 6, 'the cases reach most codes');
});

t.test(`every configuration variable is documented in ${HOME.configuration} and .env.example`, async (t) => {
  const defaults = ConfigSchema.parse({});
  for (const key of Object.keys(ConfigSchema.shape) as (keyof typeof CONFIG_DOCS)[]) {
    const raw = defaults[key];
    const shown = raw === undefined ? 'unset' : `\`${Array.isArray(raw) ? raw.join(',') : raw}\``;
    const doc = CONFIG_DOCS[key].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    t.match(configDoc, new RegExp(`\\| \`${key}\` \\| ${doc} \\| ${shown} \\|`), key);
    t.match(envExample, new RegExp(`^#? ?${key}=`, 'm'), `${key} in .env.example`);
  }
});

t.test('each table lives in one file, the one named in HOME', async (t) => {
  const headers: [string, string][] = [
    ['| code | status | meaning |', HOME.errors],
    ['| warning `code` | what it means |', HOME.codes],
    ['| `reason` | what it means | what to do |', HOME.codes],
    ['| variable | meaning | default |', HOME.configuration],
    ['| endpoint | what it does |', HOME.endpoints],
    ['| metric | type | labels | what it counts |', HOME.metrics],
  ];
  for (const [header, home] of headers) {
    t.equal(docWith(header), home, `${header} is in ${home}`);
    const elsewhere = DOC_FILES.filter((f) => f !== home && readDoc(f).split('\n').includes(header));
    t.same(elsewhere, [], `${header} is in no other file`);
  }
});

t.test("the README's endpoint table names every path of the OpenAPI document, the proxy and /mcp", async (t) => {
  const doc = JSON.parse(readFileSync(join(root, 'openapi/openapi.json'), 'utf8')) as { paths: Record<string, unknown> };
  const lines = readme.split('\n');
  const start = lines.indexOf('| endpoint | what it does |');
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|')[1] ?? '');
  }
  const named = rows.join(' ');
  for (const path of [
    ...Object.keys(doc.paths),
    '/mcp',
    '/anthropic/*',
    '/openai/*',
    '/gemini/*',
    '/metrics',
    '/docs',
    '/openapi.json',
  ]) {
    t.ok(named.includes(`${path}\``) || named.includes(`${path},`), `${path} is in the endpoint table`);
  }
});

t.test('every figure stated in prose names a figure its paragraph states, and a command that prints it', async (t) => {
  let count = 0;
  for (const file of DOC_FILES) {
    for (const step of steps(readDoc(file))) {
      if (step.kind !== 'figure') continue;
      count++;
      t.ok(step.paragraph.includes(step.written), `${file}:${step.line}: the paragraph states ${step.written}`);
      t.ok(Number.isFinite(step.value) && step.value > 0, `${file}:${step.line}: ${step.written} is a number`);
      t.ok(step.script.trim().length > 0, `${file}:${step.line}: a command prints it`);
    }
  }
  t.ok(count >= 3, `${count} figures are checked`);
  // The comparison the system test makes: exact without a tolerance, within it with one.
  const figure = { kind: 'figure', line: 1, written: '1,820', value: 1820, tolerance: 3, script: '', paragraph: '' } as const;
  t.ok(figureHolds(figure, '1844\n'));
  t.notOk(figureHolds(figure, '1720\n'), 'the old prose figure is out of tolerance');
  t.notOk(figureHolds({ ...figure, tolerance: 0 }, '1821'));
  t.notOk(figureHolds(figure, ''), 'nothing printed is no figure');
});

t.test('the README is a front page: short, with the quick start and the links into docs/', async (t) => {
  const lines = readme.split('\n').length;
  t.ok(lines <= 260, `README.md has ${lines} lines`);
  t.match(readme, /npm ci && npm run build && npm start/);
  t.match(readme, /npm ci && npm test/);
  for (const file of DOC_FILES.filter((f) => f !== 'README.md')) t.match(readme, `](${file})`, `the README links ${file}`);
});

t.test(`every metric the service registers is in ${HOME.metrics}'s table, and the table lists no other`, async (t) => {
  const text = sources(join(root, 'src'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  // Counters, gauges and histograms by name (`name: 'compactor_…'`), and the plugin's stat gauges.
  const registered = new Set([...text.matchAll(/(?:name: |stat\()'(compactor_[a-z_]+)'/g)].map((m) => m[1] as string));
  const rows = codeTable(HOME.metrics, '| metric | type | labels | what it counts |');
  for (const name of registered) t.ok(rows.has(name), `${name} is documented`);
  for (const name of rows.keys()) t.ok(registered.has(name), `${name} is registered`);
  t.ok(registered.size >= 20, `${registered.size} metrics`);
});
