import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { OPERATIONS, type OperationUrl } from '../../src/service/operations.js';
import { MemoryStore } from '../../src/store/memory.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { loadConverted } from '../support/convert.js';
import { loadCorpus } from '../support/corpus.js';

/**
 * What every strategy answers (messages, actions, artifacts, summaries, tokens, warnings: the whole
 * response) for every corpus transcript under several option sets, in every format, kept as one
 * SHA-256 per case in test/snapshots/strategies.json. A refactoring must keep every hash; a change
 * of behaviour updates the file in its own commit, saying why:
 *
 *   UPDATE_SNAPSHOTS=1 npx tap test/integration/snapshot.test.ts
 *
 * Only that command writes the file: without it a missing file fails. A thrown error is never an
 * answer: every case that throws fails, named with its error, and the file is not written.
 * SNAPSHOT_DUMP=<folder> writes each differing case's answer there as JSON, to diff by hand.
 */
const FILE = new URL('../snapshots/strategies.json', import.meta.url);
const SECRET = 'snapshot-secret-0123456789abcdef0123456789';

const CASES: [OperationUrl, string, Record<string, unknown>][] = [
  ['/v1/window', 'runs 1', { keep: { runs: 1 } }],
  ['/v1/window', 'messages 20, no first user', { keep: { messages: 20 }, keep_first_user: false }],
  ['/v1/window', 'tokens 8000', { keep: { tokens: 8000 } }],
  ['/v1/compact', 'defaults', {}],
  [
    '/v1/compact',
    'aggressive',
    { keep_tool_uses: 1, clear_tool_inputs: true, truncate_tokens: 200, clear_thinking: { keep_turns: 1 }, min_tokens: 20 },
  ],
  ['/v1/compact', 'inline, target', { store: 'inline', target_tokens: 20_000 }],
  ['/v1/compact', 'none, clear_at_least', { store: 'none', clear_at_least: 5000 }],
  ['/v1/compact', 'dry run', { keep_tool_uses: 2, dry_run: true }],
  ['/v1/summarize', 'rolling defaults', {}],
  ['/v1/summarize', 'rolling messages 10, pair', { keep: { messages: 10 }, summary_role: 'pair' }],
  ['/v1/summarize', 'rolling tokens 6000, inline', { keep: { tokens: 6000 }, store: 'inline' }],
  ['/v1/summarize', 'rolling dry run', { keep: { messages: 10 }, dry_run: true }],
  ['/v1/summarize', 'sections defaults', { mode: 'sections' }],
  [
    '/v1/summarize',
    'sections small',
    {
      mode: 'sections',
      max_pair_tokens: 256,
      max_section_tokens: 2000,
      qa: { enabled: true, max_sections: 3, max_tokens: 4000 },
    },
  ],
  ['/v1/fit', 'target 8000', { target_tokens: 8000, policy: 'tokens' }],
  ['/v1/fit', 'target 30000, summarize pair', { target_tokens: 30_000, summarize: { summary_role: 'pair' }, policy: 'tokens' }],
  [
    '/v1/fit',
    'target 4000, sections, window runs',
    { target_tokens: 4000, summarize: { mode: 'sections' }, window: { keep: { runs: 1 } }, policy: 'tokens' },
  ],
  ['/v1/fit', 'dry run', { target_tokens: 8000, dry_run: true, policy: 'tokens' }],
  [
    '/v1/fit',
    'policy cost, 32k window, Anthropic-style prices',
    { target_fraction: 0.6, context_window: 32_000, pricing: { input: 1, cached_input: 0.1, cache_write: 1.25, output: 5 } },
  ],
  ['/v1/fit', 'policy cost, long horizon, no cache', { target_tokens: 8000, horizon: { calls: 500 }, cache: { enabled: false } }],
  ['/v1/compact', 'clear_at_least auto', { clear_at_least: 'auto', horizon: { calls: 200 } }],
];

const transcripts = [...loadCorpus(), ...loadConverted()];

interface Answers {
  out: Record<string, { hash: string; value: unknown }>;
  /** The cases that threw instead of answering, with their error. */
  errors: string[];
}

async function answers(): Promise<Answers> {
  const out: Record<string, { hash: string; value: unknown }> = {};
  const errors: string[] = [];
  for (const transcript of transcripts) {
    const compactor = new Compactor(new TokenCounter(100_000), { store: new MemoryStore(), secret: SECRET });
    const caller = compactor.caller(null);
    for (const [url, label, options] of CASES) {
      const op = OPERATIONS[url];
      const body = op.body.parse({
        messages: transcript.messages,
        format: transcript.format,
        ...('system' in transcript && transcript.system ? { system: transcript.system } : {}),
        ...(transcript.model ? { model: transcript.model } : {}),
        ...options,
      });
      const key = `${transcript.file} ${url} ${label}`;
      try {
        const { value } = await op.perform(compactor, body, { signal: AbortSignal.timeout(120_000), caller });
        out[key] = { hash: createHash('sha256').update(JSON.stringify(value)).digest('hex'), value };
      } catch (error) {
        errors.push(`${key}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
      }
    }
  }
  return { out, errors };
}

t.test('every strategy answers as the snapshot says, on every transcript, option set and format', async (t) => {
  const { out: got, errors } = await answers();
  t.same(errors, [], 'no case throws: an error is never a snapshot answer');
  const hashes = Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.hash]));
  if (process.env.UPDATE_SNAPSHOTS === '1') {
    if (errors.length > 0) return;
    mkdirSync(new URL('.', FILE), { recursive: true });
    writeFileSync(FILE, `${JSON.stringify(hashes, null, 2)}\n`);
    t.pass(`wrote ${Object.keys(hashes).length} cases to test/snapshots/strategies.json`);
    return;
  }
  if (!existsSync(FILE)) {
    t.fail('test/snapshots/strategies.json is missing: UPDATE_SNAPSHOTS=1 writes it, in a commit that says why');
    return;
  }
  const expected = JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, string>;
  const differ = Object.keys({ ...expected, ...hashes }).filter((k) => expected[k] !== hashes[k]);
  const dump = process.env.SNAPSHOT_DUMP;
  if (dump && differ.length > 0) {
    mkdirSync(dump, { recursive: true });
    for (const k of differ) writeFileSync(`${dump}/${k.replace(/[^\w.-]+/g, '_')}.json`, JSON.stringify(got[k]?.value, null, 1));
  }
  t.same(differ, [], `${Object.keys(hashes).length} cases; those that differ are listed`);
});
