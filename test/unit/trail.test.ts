import t from 'tap';
import { TRAIL_HEADING } from '../../src/history/vocabulary.js';
import { Compactor } from '../../src/service/compactor.js';
import { SummarizeOptions, summarizeStrategy } from '../../src/strategies/summarize/index.js';
import { guardFacts } from '../../src/summarizers/facts.js';
import { renderTrail, Trail, trailOf } from '../../src/summarizers/trail.js';
import { callTrail, patchTrail, shellScript } from '../../src/summarizers/trail-calls.js';
import { shellTrail, splitShell } from '../../src/summarizers/trail-shell.js';
import { buildTrail, constraintsOf, errorOf, exitOf, testsOf } from '../../src/summarizers/trail-text.js';
import type { Summarizer } from '../../src/summarizers/types.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { type Skeleton, type SkeletonCall, toAnthropic, toGemini, toOpenAIChat, toResponses } from '../support/histories.js';

/** A summarizer that names nothing: whatever survives, the trail put there. */
const lossy: Summarizer = {
  kind: 'llm',
  async summarize() {
    return {
      text: 'The agent worked on the task.',
      usage: { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, calls: 1 },
      model: 'm',
    };
  },
  plan: () => ({ calls: [], model: 'm' }),
  model: () => 'm',
};

const call = (name: string, args: Record<string, unknown>, result = 'ok', error = false): SkeletonCall => ({
  name,
  args: args as Record<string, string>,
  result,
  error,
});

const CALLS: SkeletonCall[] = [
  call('Read', { file_path: 'src/read.py' }),
  call('Write', { file_path: 'src/written.py', content: 'x = 1' }),
  call('Edit', { file_path: 'src/edited.py', old_string: 'a', new_string: 'b' }),
  call('MultiEdit', { file_path: 'src/multi.py', edits: [] }),
  call('NotebookEdit', { notebook_path: 'nb/analysis.ipynb', new_source: 'x' }),
  call('str_replace_editor', { command: 'view', path: '/repo/viewed.py' }),
  call('str_replace_editor', { command: 'create', path: '/repo/made.py', file_text: 'x' }),
  call('str_replace_based_edit_tool', { command: 'str_replace', path: '/repo/replaced.py' }),
  call('apply_patch', {
    input:
      '*** Begin Patch\n*** Add File: pa/added.py\n+x\n*** Update File: pa/updated.py\n@@\n-a\n+b\n*** Delete File: pa/gone.py\n*** End Patch',
  }),
  call(
    'bash',
    { command: "cat <<'EOF' > repro.py\nimport os\nprint(1) > 2\nEOF\npython repro.py" },
    "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nKeyError: 'id'\n</output>",
  ),
  call('bash', {
    command:
      "sed -i 's/a/b/' src/sedded.py && rm old.txt && mv from.py to.py && touch touched.py && git add staged.py && head -n 5 README.md && echo hi >> log.txt | tee teed.txt",
  }),
  call('bash', { command: 'pytest tests/test_x.py' }, 'FAILED tests/test_x.py::test_y - AssertionError\nExit code: 1', true),
  call('WebFetch', { url: 'https://example.com/doc', prompt: 'read it' }),
  call('bash', { command: 'curl -s https://api.example.com/v1/items' }),
  call('bash', { command: 'npx tsc' }, "src/app.ts(3,5): error TS2345: Argument of type 'string' is not assignable"),
  call('bash', { command: 'open /repo/swe.py' }),
  call('bash', { command: 'edit 1:3\nfoo > bar.py\nend_of_edit' }),
  call('write_to_file', { path: 'cline/new.ts', content: 'x' }),
  call('replace_in_file', { path: 'cline/changed.ts', diff: 'x' }),
  call('read_file', { path: 'cline/read.ts' }),
  call('shell', { command: ['bash', '-lc', 'cat > codex.txt'] }),
];

const skeleton: Skeleton = {
  system: ['You are an agent.'],
  turns: [
    { kind: 'assistant', text: 'Hello.', thinking: null, calls: [] },
    { kind: 'user', text: 'Fix the bug. You must not touch setup.py. Never push to main!', image: false },
    { kind: 'assistant', text: 'Working on it; see https://docs.example.org/guide.', thinking: null, calls: CALLS },
    { kind: 'user', text: 'thanks', image: false },
    { kind: 'assistant', text: 'done', thinking: null, calls: [] },
    { kind: 'user', text: 'next', image: false },
    { kind: 'assistant', text: 'ok', thinking: null, calls: [] },
  ],
  inFlight: null,
};

const FORMATS: Record<string, { messages: unknown[]; system?: unknown }> = {
  'openai-chat': { messages: toOpenAIChat(skeleton) },
  anthropic: (() => {
    const a = toAnthropic(skeleton);
    return { messages: a.messages, system: a.system };
  })(),
  'openai-responses': { messages: toResponses(skeleton) },
  gemini: (() => {
    const g = toGemini(skeleton, true);
    return { messages: g.messages, ...(g.system ? { system: g.system } : {}) };
  })(),
};

async function summarize(input: { messages: unknown[]; system?: unknown }, options: Record<string, unknown> = {}) {
  // One installation secret for every call: a later call verifies the summaries an earlier one wrote.
  const c = new Compactor(new TokenCounter(1000), { summarizer: lossy, secret: 'trail-test-secret-0123456789' });
  const o = SummarizeOptions.parse({ keep: { messages: 2 }, store: 'none', ...options });
  const r = await c.run(summarizeStrategy, input as never, o);
  return r;
}

const line = (text: string, label: string) => text.split('\n').find((l) => l.startsWith(`${label}:`)) ?? '';

for (const [format, input] of Object.entries(FORMATS)) {
  t.test(`the trail of every source, ${format}`, async (t) => {
    const r = await summarize(input);
    const summary = r.extra.summary;
    if (!summary) throw new Error('no summary');
    const text = summary.text;
    t.ok(text.startsWith('The agent worked on the task.'), 'the prose comes first');
    const trail = text.slice(text.indexOf(TRAIL_HEADING));
    for (const f of [
      'src/edited.py',
      'src/multi.py',
      'nb/analysis.ipynb',
      '/repo/replaced.py',
      'pa/updated.py',
      'src/sedded.py',
      'log.txt',
      '/repo/swe.py',
      'cline/changed.ts',
      'staged.py',
    ])
      t.match(line(trail, 'modified'), f, `modified: ${f}`);
    for (const f of [
      'src/written.py',
      '/repo/made.py',
      'pa/added.py',
      'repro.py',
      'to.py',
      'touched.py',
      'teed.txt',
      'cline/new.ts',
      'codex.txt',
    ])
      t.match(line(trail, 'created'), f, `created: ${f}`);
    for (const f of ['pa/gone.py', 'old.txt', 'from.py']) t.match(line(trail, 'deleted'), f, `deleted: ${f}`);
    for (const f of ['src/read.py', '/repo/viewed.py', 'README.md', 'cline/read.ts'])
      t.match(line(trail, 'read'), f, `read: ${f}`);
    for (const u of ['https://example.com/doc', 'https://api.example.com/v1/items', 'https://docs.example.org/guide'])
      t.match(line(trail, 'urls'), u, `url: ${u}`);
    t.notMatch(trail, 'bar.py', "an SWE-agent edit's body is no command");
    t.match(trail, "- KeyError: 'id'", 'the exception and its first line');
    t.match(trail, "- error TS2345: Argument of type 'string'", 'a compiler error');
    t.match(trail, '- AssertionError', 'an assertion');
    t.match(line(trail, 'tests'), 'tests/test_x.py::test_y (failed)', 'a failed test');
    t.match(trail, '- You must not touch setup.py.', 'a constraint');
    t.match(trail, '- Never push to main!', 'another');
    t.match(trail, '- `pytest tests/test_x.py` → exit 1', 'a command and its exit status');
    t.match(trail, "- `cat <<'EOF' > repro.py` → exit 1", "mini-swe-agent's return code");
    t.equal(summary.facts.kept, 0, 'the prose names nothing');
    t.ok(summary.facts.appended > 30, 'the trail appended what the prose dropped');
    t.equal(summary.facts.left_out, 0, 'all within the budget');
    const modified = summary.facts.classes.find((c) => c.class === 'modified');
    t.same(modified, { class: 'modified', found: 10, kept: 0, appended: 10, left_out: 0 });
  });
}

t.test('a later summary folds the earlier trail in (parsed back, not re-extracted from prose)', async (t) => {
  const first = await summarize(FORMATS['openai-chat'] as { messages: unknown[] });
  const out = first.messages as unknown[];
  const more = [
    ...out,
    { role: 'user', content: 'Now also fix lib/other.py. Do not change the API.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c9', type: 'function', function: { name: 'Edit', arguments: '{"file_path":"lib/other.py"}' } }],
    },
    { role: 'tool', tool_call_id: 'c9', content: 'ok' },
    { role: 'assistant', content: 'done' },
    { role: 'user', content: 'thanks' },
    { role: 'assistant', content: 'bye' },
  ];
  const second = await summarize({ messages: more });
  const text = second.extra.summary?.text ?? '';
  t.equal(text.split(TRAIL_HEADING).length, 2, 'one trail');
  t.match(line(text, 'modified'), /src\/edited\.py.*lib\/other\.py/, 'earlier items first, then the new range');
  t.match(text, '- Do not change the API.');
  t.match(text, "- KeyError: 'id'");
});

t.test('the budget keeps modified and created files first and says what it left out', async (t) => {
  const r = await summarize(FORMATS.anthropic as { messages: unknown[] }, { trail_tokens: 120 });
  const summary = r.extra.summary;
  const text = summary?.text ?? '';
  t.match(text, 'modified: ');
  t.match(text, /left out \(trail budget\): .*commands \d+/);
  t.ok((summary?.facts.left_out ?? 0) > 0);
  const off = await summarize(FORMATS.anthropic as { messages: unknown[] }, { trail_tokens: 0 });
  t.notMatch(off.extra.summary?.text ?? '', TRAIL_HEADING, 'trail_tokens 0: no trail');
  t.same(
    off.extra.summary?.facts.classes.map((c) => c.class),
    ['references'],
    'the guard alone',
  );
});

t.test('sections mode and the extractive summarizer carry the trail', async (t) => {
  // Long results, so that a digest and its trail are smaller than what they replace.
  const long = {
    ...skeleton,
    turns: skeleton.turns.map((turn) =>
      turn.kind === 'assistant'
        ? { ...turn, calls: turn.calls.map((c) => ({ ...c, result: `${c.result}\n${'lorem ipsum '.repeat(400)}` })) }
        : turn,
    ),
  };
  const input = { messages: toOpenAIChat(long) };
  const extractive = new Compactor(new TokenCounter(1000));
  const r = await extractive.run(
    summarizeStrategy,
    input as never,
    SummarizeOptions.parse({ keep: { messages: 2 }, store: 'none' }),
  );
  t.equal(r.extra.summary?.summarizer, 'extractive');
  t.match(r.extra.summary?.text ?? '', `${TRAIL_HEADING}\nmodified: src/edited.py`);
  const c = new Compactor(new TokenCounter(1000), { summarizer: lossy });
  const sections = await c.run(
    summarizeStrategy,
    input as never,
    SummarizeOptions.parse({ mode: 'sections', keep_sections: 1, store: 'none' }),
  );
  t.ok(sections.applied, 'sections mode summarized');
  t.match(JSON.stringify(sections.messages), `${TRAIL_HEADING}\\nmodified: src/edited.py`, 'a section summary carries the trail');
});

t.test('shell scripts', async (t) => {
  const words = splitShell('a \'b c\' "d" e\\ f; g 2>&1 > out.txt < in.txt && h &> all.log\ncat <<-EOF > x\nrm -rf /\nEOF\nls');
  t.same(
    words.map((w) => w.words),
    [['a', 'b c', 'd', 'e f'], ['g'], ['h'], ['cat'], ['ls']],
  );
  t.same(words[1]?.redirects, [
    { op: '>', target: 'out.txt' },
    { op: '<', target: 'in.txt' },
  ]);
  const trail = new Trail();
  const state: { open?: string } = {};
  shellTrail(
    'sudo FOO=1 sed -n 1,5p a.py; sed -e s/x/y/ -i b.py; cp c.py d.py; git rm e.py; git mv f.py g.py; git checkout -- h.py; wget http://w.example/x; mkdir -p dir/sub; tail -n 3 /dev/null; cat $HOME/x',
    trail,
    state,
  );
  shellTrail('edit 1:2\nend_of_edit', trail, state);
  shellTrail('create new.py', trail, state);
  shellTrail('edit 1:2\nx\nend_of_edit', trail, state);
  t.same(trail.items('read'), ['a.py', 'c.py']);
  t.same(trail.items('modified'), ['b.py', 'h.py']);
  t.same(trail.items('created'), ['d.py', 'g.py', 'dir/sub', 'new.py']);
  t.same(trail.items('deleted'), ['e.py', 'f.py']);
  t.same(trail.items('urls'), ['http://w.example/x']);
  t.same(shellScript({ command: ['ls', '-la'] }), 'ls -la');
  t.equal(shellScript({ command: 3 }), undefined);
  t.equal(callTrail('bash', { command: 3 }, trail, state), undefined);
  t.equal(callTrail('bash', undefined, trail, state), undefined);
});

t.test('patches and unified diffs', async (t) => {
  const trail = new Trail();
  patchTrail('--- a/m.py\n+++ b/m.py\n@@\n--- /dev/null\n+++ b/n.py\n--- a/o.py\n+++ /dev/null\n*** Move to: p.py\n', trail);
  t.same(trail.items('modified'), ['m.py']);
  t.same(trail.items('created'), ['n.py', 'p.py']);
  t.same(trail.items('deleted'), ['o.py']);
  const viaShell = new Trail();
  callTrail('bash', { command: "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: q.py\n*** End Patch\nEOF" }, viaShell, {});
  t.same(viaShell.items('modified'), ['q.py']);
  callTrail('delete_file', { path: 'r.py' }, viaShell, {});
  callTrail('fetch', { url: 'https://f.example' }, viaShell, {});
  callTrail('str_replace_editor', { command: 'undo_edit', path: 's.py' }, viaShell, {});
  callTrail('str_replace_editor', { command: 'other', path: 't.py' }, viaShell, {});
  t.same(viaShell.items('deleted'), ['r.py']);
  t.same(viaShell.items('urls'), ['https://f.example']);
  t.same(viaShell.items('mentioned'), ['t.py']);
});

t.test('errors, tests, exit codes and constraints in text', async (t) => {
  t.equal(errorOf("E   KeyError: 'id'"), "KeyError: 'id'");
  t.equal(errorOf('AssertionError'), 'AssertionError');
  t.equal(errorOf('error[E0308]: mismatched types'), 'error[E0308]: mismatched types');
  t.equal(errorOf('all good'), undefined);
  const tests: string[] = [];
  testsOf('tests/a.py::test_b PASSED\nERROR tests/c.py::T::test_d[1-2]\nx.py:: nothing\n.py::y', (id, s) =>
    tests.push(`${id}|${s}`),
  );
  t.same(tests, ['tests/a.py::test_b|passed', 'tests/c.py::T::test_d[1-2]|failed']);
  t.equal(exitOf('Exit code 2'), '2');
  t.equal(exitOf(`${'x'.repeat(1000)}\nexited with code 3`), '3');
  t.equal(exitOf('fine'), undefined);
  const found: string[] = [];
  constraintsOf('Only use Python 3.8. Nice! Always run the tests?\n[compactor:x] must', (s) => found.push(s));
  t.same(found, ['Only use Python 3.8.', 'Always run the tests?']);
});

t.test('a trail renders, parses back and reports', async (t) => {
  const trail = buildTrail([
    { role: 'assistant', text: '', calls: [{ name: 'Write', args: '', input: { file_path: 'a.py' }, id: 'c1' }], media: [] },
    { role: 'tool', text: 'done', calls: [], tool: { name: 'Write', error: false, callId: 'c1' }, media: [] },
    { role: 'assistant', text: '', calls: [{ name: 'custom', args: 'see b/c.py' }], media: [] },
  ]);
  const { text, counts } = renderTrail(trail, 'we wrote a.py', 500);
  t.equal(text, `${TRAIL_HEADING}\ncreated: a.py\nmentioned: b/c.py`);
  t.same(counts[0], { class: 'created', found: 1, kept: 1, appended: 0, left_out: 0 });
  const back = trailOf(`prose\n\n${text}\nnot a line\n- orphan`);
  t.equal(back.prose, 'prose');
  t.same(back.trail.items('created'), ['a.py']);
  t.same(trailOf(null).trail.items('read'), []);
  t.same(trailOf(`${text}`).prose, '');
  const parsed = Trail.parse(['tests: x.py::y (failed)', 'commands:', '- `ls` → exit 0', 'bogus: z', 'read: ', 'read: "q r"']);
  t.same(parsed.items('tests'), ['x.py::y (failed)']);
  t.same(parsed.items('commands'), ['`ls` → exit 0']);
  const empty = renderTrail(new Trail(), '', 100);
  t.equal(empty.text, '');
  const guarded = guardFacts('prose', [], 0, { trail, tokens: 500 });
  t.equal(guarded.facts.found, 2);
});

t.test('the default budget holds a 200-file session, absolute paths and all', async (t) => {
  const budget = SummarizeOptions.parse({}).trail_tokens;
  const trail = new Trail();
  for (let i = 0; i < 200; i++) trail.file(`/home/jim/project/src/pkg_${i % 9}/module_${i}.py`, 'written');
  const { text, counts } = renderTrail(trail, '', budget);
  t.notMatch(text, /left out/, `all 200 within the default ${budget}`);
  t.equal(
    counts.reduce((n, c) => n + c.appended, 0),
    200,
    'every file is in the trail',
  );
});
