import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { markers } from '../../src/history/markers.js';
import { TRAIL_HEADING } from '../../src/history/vocabulary.js';
import { compactionAnswer } from '../../src/proxy/compaction/answer.js';
import { CLAUDE_CODE_SECTIONS, type RecognizedCompaction, recognizeCompaction } from '../../src/proxy/compaction/recognize.js';
import { replaceSealed, type SealClaims, sealer, textDigest } from '../../src/proxy/compaction/seal.js';
import { claudeCodeSummaryText, type PreparedCompaction, summarySections } from '../../src/proxy/compaction/summary-text.js';
import { parseSse } from '../support/provider/sse.js';
import { schemaErrors } from '../support/schemas.js';

const DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/agent-compaction');
const fixture = (name: string) =>
  JSON.parse(readFileSync(resolve(DIR, `${name}.json`), 'utf8')) as {
    url: string;
    headers: Record<string, string>;
    body: { model: string; input: Record<string, unknown>[] };
  };

const ID = `art_${'ab12'.repeat(6)}`;
const SUMMARY = [
  '## Goal and constraints',
  'Count the numbers with seq; keep the output short.',
  '## Decisions',
  'Use seq rather than a loop.',
  '## Done and found',
  'Ran `seq 1 3000` in /tmp/work.',
  '## Failed attempts',
  'None.',
  '## Current state',
  'Three commands ran.',
  '## Remaining work',
  'Say what was found.',
  TRAIL_HEADING,
  'commands:',
  '- seq 1 3000',
].join('\n');
const PREPARED: PreparedCompaction = { summary: SUMMARY, artifactId: ID, after: 'user: and now report', recallTool: false };
const seal = sealer('installation-secret', 'tenant-a');
const context = { model: 'claude-opus-5-5', seal: seal.seal };

const answer = (r: RecognizedCompaction, prepared = PREPARED) => {
  const a = compactionAnswer(r, prepared, context);
  if (!a) throw new Error('no answer');
  return a;
};
type Completed = { output: Record<string, unknown>[]; usage: { total_tokens: number } };
/** The response of a stream's last event (`response.completed`). */
const completed = (evs: Record<string, unknown>[]) => evs.at(-1)?.response as Completed;
const events = (body: string) => parseSse(body).map((e) => JSON.parse(e.data) as Record<string, unknown>);

t.test(
  'Claude Code: its numbered sections where Compactor’s map, then the trail, the digest and the recall pointer',
  async (t) => {
    const text = claudeCodeSummaryText(PREPARED);
    const at = (s: string) => text.indexOf(s);
    t.ok(at('<analysis>') < at('<summary>') && at('<summary>') < at('</summary>'));
    for (const [n, title] of [
      [1, 'Primary Request and Intent'],
      [2, 'Key Technical Concepts'],
      [3, 'Files and Code Sections'],
      [4, 'Errors and fixes'],
      [7, 'Pending Tasks'],
      [8, 'Current Work'],
    ] as const) {
      t.ok(text.includes(`\n${n}. ${title}:\n`), title);
      t.equal(CLAUDE_CODE_SECTIONS[n - 1], title);
    }
    t.notOk(text.includes('6. All user messages:'), 'a section with nothing mapped is left out');
    t.ok(at('Count the numbers with seq') > at('1. Primary Request'));
    t.ok(at(TRAIL_HEADING) > at('8. Current Work') && at('user: and now report') > at(TRAIL_HEADING));
    t.ok(text.includes(`Compactor's artifact ${ID}`), 'the pointer names the artifact');
    t.notOk(text.includes('call the `recall` tool'), 'the recall tool is named only where offered');
    t.ok(claudeCodeSummaryText({ ...PREPARED, recallTool: true }).includes(`call the \`recall\` tool with ${ID}`));
    t.same(summarySections('lead\n## A\nx\n## B\n').sections, [
      { title: 'A', body: 'x' },
      { title: 'B', body: '' },
    ]);
  },
);

t.test(
  'Claude Code’s answer: an Anthropic message, streamed or JSON, with zero usage, that the schema accepts back',
  async (t) => {
    const r = recognizeCompaction(
      'anthropic',
      fixture('claude-code-auto').url,
      fixture('claude-code-auto').headers,
      fixture('claude-code-auto').body,
    );
    if (!r) throw new Error('fixture not recognised');
    const streamed = answer(r);
    t.equal(streamed.contentType, 'text/event-stream');
    const evs = events(streamed.body);
    t.same(
      evs.map((e) => e.type),
      ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
    );
    const start = evs[0]?.message as Record<string, unknown>;
    t.same(start.usage, { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
    t.equal(start.model, 'claude-opus-5-5');
    const delta = evs[2]?.delta as { text: string };
    t.equal(delta.text, streamed.text);
    const json = answer({ ...r, stream: false });
    const message = JSON.parse(json.body) as { content: unknown[]; role: string; stop_reason: string };
    t.equal(message.stop_reason, 'end_turn');
    t.same(schemaErrors('anthropic', [{ role: message.role, content: message.content }]), []);
    t.equal(answer(r).body, streamed.body, 'deterministic');
  },
);

t.test('Codex local form: an ordinary Responses assistant message, streamed or JSON', async (t) => {
  const c = fixture('codex-local');
  const r = recognizeCompaction('openai', c.url, c.headers, c.body);
  if (!r) throw new Error('fixture not recognised');
  const a = compactionAnswer(r, PREPARED, { ...context, model: c.body.model });
  if (!a) throw new Error('no answer');
  t.ok(a.text.startsWith('## Goal and constraints') && a.text.includes('user: and now report') && a.text.includes(ID));
  t.equal(a.sealed, undefined);
  const evs = events(a.body);
  t.equal(evs[0]?.type, 'response.created');
  t.equal(evs.at(-1)?.type, 'response.completed');
  t.same(
    evs.map((e) => e.sequence_number),
    evs.map((_, i) => i),
  );
  const done = completed(evs).output;
  t.equal(done.length, 1);
  const content = done[0]?.content as { text: string }[] | undefined;
  t.equal(content?.[0]?.text, a.text);
  t.equal(completed(evs).usage.total_tokens, 0);
  t.same(schemaErrors('openai-responses', done), [], 'the item as Codex sends it back is a valid input item');
  const json = JSON.parse(compactionAnswer({ ...r, stream: false }, PREPARED, context)?.body ?? '{}') as { output: unknown[] };
  t.same(json.output, done);
});

t.test('Codex trigger form: exactly one compaction item with a sealed, non-empty encrypted_content', async (t) => {
  const c = fixture('codex-trigger');
  const r = recognizeCompaction('openai', c.url, c.headers, c.body);
  if (!r) throw new Error('fixture not recognised');
  const a = answer(r);
  const evs = events(a.body);
  t.same(
    evs.map((e) => e.type),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done', 'response.completed'],
  );
  const output = completed(evs).output;
  t.equal(output.length, 1);
  const item = output[0] as { type: string; encrypted_content: string };
  t.equal(item.type, 'compaction');
  t.ok(item.encrypted_content.length > 0);
  t.same(seal.verify(item.encrypted_content), { id: ID, digest: textDigest(a.text) });
  t.same(a.sealed, { id: ID, digest: textDigest(a.text) });
  t.same(schemaErrors('openai-responses', output), []);
  t.equal(compactionAnswer({ agent: 'codex', form: 'compact-endpoint', stream: false }, PREPARED, context), undefined);
});

t.test('sealed tokens: round trip; another tenant, another installation, an edit, a forgery do not verify', async (t) => {
  const claims: SealClaims = { id: ID, digest: textDigest('the summary') };
  const token = seal.seal(claims);
  t.same(seal.verify(token), claims);
  t.equal(seal.seal(claims), token, 'deterministic');
  t.same(seal.verify(seal.seal({ id: null, digest: claims.digest })), { id: null, digest: claims.digest });
  t.equal(sealer('installation-secret', 'tenant-b').verify(token), undefined, 'another tenant');
  t.equal(sealer('another-secret', 'tenant-a').verify(token), undefined, 'another installation');
  for (let i = 6; i < token.length; i += 7) {
    const flipped = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
    t.equal(seal.verify(flipped), undefined, `edited at ${i}`);
  }
  const [prefix, payload] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ id: `art_${'00'.repeat(12)}`, digest: claims.digest })).toString('base64url');
  t.equal(seal.verify(`${prefix}.${forged}.${token.split('.')[2]}`), undefined, 'claims swapped under the MAC');
  t.equal(seal.verify(`${prefix}.${payload}.`), undefined, 'no MAC');
  t.equal(seal.verify('gAAAAABprovider-encrypted'), undefined, 'the provider’s own');
  // A history marker's MAC under the same secret and scope is no seal.
  const marker = markers('installation-secret', 'tenant-a').summary(ID, 'own', 3, 'x');
  t.equal(seal.verify(marker), undefined);
});

t.test('replaceSealed: our verified items become the summary text they stand for; anything else is left as sent', async (t) => {
  const c = fixture('codex-after-trigger');
  const text = 'the summary the item stands for';
  const ours = seal.seal({ id: ID, digest: textDigest(text) });
  const theirs = sealer('installation-secret', 'tenant-b').seal({ id: ID, digest: textDigest(text) });
  const edited = `${ours.slice(0, -2)}xx`;
  const input = [
    ...c.body.input.filter((i) => i.type !== 'compaction'),
    { type: 'compaction', id: 'cmp_1', encrypted_content: ours },
    { type: 'compaction', encrypted_content: theirs },
    { type: 'compaction', encrypted_content: edited },
    { type: 'compaction', encrypted_content: 'gAAAAAB-provider' },
  ];
  const body = { ...c.body, input };
  const before = JSON.stringify(body);
  const loads: SealClaims[] = [];
  const out = await replaceSealed(body, seal.verify, async (claims) => {
    loads.push(claims);
    return text;
  });
  t.equal(JSON.stringify(body), before, 'the body given is not mutated');
  t.same([out.replaced, out.missing, out.leftAsSent], [1, 0, 3]);
  const sent = (out.body as { input: Record<string, unknown>[] }).input;
  t.equal(sent.length, input.length);
  const at = input.length - 4;
  t.same(sent[at], { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
  t.same(sent.slice(at + 1), input.slice(at + 1), 'another tenant’s, the edited and the provider’s, as sent');
  t.same(loads, [{ id: ID, digest: textDigest(text) }]);
  t.same(schemaErrors('openai-responses', [sent[at]]), []);
  // Its text gone, or not the text sealed: a notice naming the artifact, never our token upstream.
  for (const load of [async () => undefined, async () => 'another text']) {
    const gone = await replaceSealed(body, seal.verify, load);
    t.same([gone.replaced, gone.missing], [0, 1]);
    const notice = JSON.stringify((gone.body as { input: unknown[] }).input[at]);
    t.ok(notice.includes(ID) && !notice.includes(ours));
  }
  // Nothing of ours: the very body back.
  const plain = fixture('codex-turn').body;
  t.equal((await replaceSealed(plain, seal.verify, async () => text)).body, plain);
  t.equal((await replaceSealed('not a body', seal.verify, async () => text)).body, 'not a body');
});
