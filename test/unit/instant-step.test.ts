import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { sealer } from '../../src/proxy/compaction/seal.js';
import { type FoundSummary, type InstantInput, instantCompaction, outcomeLabel } from '../../src/proxy/compaction/step.js';

const DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/agent-compaction');
const fixture = (name: string) =>
  JSON.parse(readFileSync(resolve(DIR, `${name}.json`), 'utf8')) as {
    url: string;
    headers: Record<string, string>;
    body: unknown;
  };

const FOUND: FoundSummary = {
  prepared: { summary: '## Goal and constraints\nCount.', artifactId: `art_${'cd'.repeat(12)}`, after: '', recallTool: true },
  writtenBy: 'llm',
};
const context = { model: 'm', seal: sealer('s', 'tenant').seal };

function input(name: string, provider: string, extra: Partial<InstantInput> = {}): InstantInput {
  const c = fixture(name);
  return { provider, path: c.url, headers: c.headers, body: c.body, find: async () => FOUND, context, ...extra };
}

t.test('an ordinary request is no compaction; nothing is looked up', async (t) => {
  let looked = 0;
  const step = await instantCompaction(
    input('codex-turn', 'openai', {
      find: async () => {
        looked++;
        return FOUND;
      },
    }),
  );
  t.same(step, { kind: 'not-compaction' });
  t.equal(outcomeLabel(step), undefined);
  t.equal(looked, 0);
});

t.test('a recognised request with a prepared LLM summary is answered, in each form', async (t) => {
  for (const [name, provider] of [
    ['claude-code-auto', 'anthropic'],
    ['codex-local', 'openai'],
    ['codex-trigger', 'openai'],
  ] as const) {
    const step = await instantCompaction(input(name, provider));
    t.equal(step.kind, 'answered', name);
    if (step.kind !== 'answered') continue;
    t.equal(step.header, 'compaction-answered');
    t.equal(outcomeLabel(step), 'answered');
    t.ok(step.answer.text.includes(FOUND.prepared.summary.split('\n')[1] ?? '?'));
    t.equal(step.answer.sealed !== undefined, name === 'codex-trigger');
  }
});

t.test('it passes, saying why: opted out, off, nothing ready, extractive only, unreadable, an unanswered form', async (t) => {
  const cases: [string, Partial<InstantInput>, string][] = [
    [
      'opted-out',
      { headers: { ...fixture('codex-trigger').headers, 'x-compactor-instant-compaction': ' OFF ' } },
      'passed_opted_out',
    ],
    ['off', { setting: false }, 'passed_off'],
    ['none-ready', { find: async () => undefined }, 'passed_none_ready'],
    ['extractive', { find: async () => ({ ...FOUND, writtenBy: 'extractive' }) }, 'passed_extractive'],
    [
      'unavailable',
      {
        find: async () => {
          throw new Error('redis timeout');
        },
      },
      'passed_unavailable',
    ],
  ];
  for (const [reason, extra, label] of cases) {
    const step = await instantCompaction(input('codex-trigger', 'openai', extra));
    t.match(step, { kind: 'passed', reason, header: `compaction-passed; reason=${reason}` }, reason);
    t.equal(outcomeLabel(step), label);
  }
  const optIn = await instantCompaction(
    input('codex-trigger', 'openai', { setting: 'extractive', find: async () => ({ ...FOUND, writtenBy: 'extractive' }) }),
  );
  t.equal(optIn.kind, 'answered', '"extractive" opts in to extractive summaries');
  const compact = await instantCompaction({
    ...input('codex-trigger', 'openai'),
    path: '/v1/responses/compact',
    body: { model: 'm', input: [{ type: 'message', role: 'user', content: 'x' }] },
  });
  t.match(compact, { kind: 'passed', reason: 'unsupported-form' });
});
