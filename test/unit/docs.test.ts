import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CONFIG_DOCS, ConfigSchema } from '../../src/config.js';
import { REASONS, WARNINGS } from '../../src/contract/codes.js';
import { ERRORS } from '../../src/errors.js';
import { Compactor } from '../../src/service/compactor.js';
import { OPERATIONS, type OperationUrl } from '../../src/service/operations.js';
import { MemoryStore } from '../../src/store/memory.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadConverted } from '../support/convert.js';
import { loadCorpus } from '../support/corpus.js';

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

/**
 * The README table under the header line `header`, by the code in its first cell: the second cell
 * (what the code means). Throws when the table is not there.
 */
function codeTable(header: string): Map<string, string> {
  const lines = readme.split('\n');
  const start = lines.indexOf(header);
  if (start < 0) throw new Error(`no README table headed ${header}`);
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
  t.test(`every ${what} code is in the README's table with its meaning, and the table lists no other`, async (t) => {
    const rows = codeTable(header);
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
