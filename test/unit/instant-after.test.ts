import fc from 'fast-check';
import t from 'tap';
import { afterDigest, MAX_LINES, TASK_HEADING, taskBlock, USER_CHARS } from '../../src/proxy/compaction/after.js';
import { claudeCodeSummaryText, codexSummaryText } from '../../src/proxy/compaction/summary-text.js';
import { summarisedHistory } from '../../src/proxy/compaction/wire.js';

/** The digest of what came after a prepared summary's range, and the history a compaction request summarises. */

t.test('the digest keeps the user’s words, the assistant’s first words, the tools called and the artifacts named', async (t) => {
  const digest = afterDigest([
    { role: 'user', content: 'Now count the lines in art_0123456789abcdef01234567 please.' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Counting them.' },
        { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'wc -l' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'secret tool output 42' }] },
    { type: 'function_call', name: 'exec', arguments: '{}', call_id: 'c1' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And then report.' }] },
  ]);
  t.match(digest, /- User: Now count the lines/);
  t.match(digest, /- Assistant: Counting them\./);
  t.match(digest, /- Called: Bash/);
  t.match(digest, /- Called: exec/);
  t.match(digest, /- User: And then report\./);
  t.match(digest, /Artifacts named: art_0123456789abcdef01234567/);
  t.notMatch(digest, /secret tool output/, 'tool output is named by its artifacts, not quoted');
  t.equal(afterDigest([]), '', 'nothing after the range: empty');
});

t.test('the digest is deterministic and bounded, whatever the messages', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.jsonValue(), { maxLength: 30 }), (messages) => {
      const a = afterDigest(messages);
      t.equal(a, afterDigest(structuredClone(messages)));
      const lines = a ? a.split('\n') : [];
      return lines.length <= MAX_LINES + 1 && lines.every((l) => l.length <= USER_CHARS + 64 || l.startsWith('- Artifacts'));
    }),
  );
  const many = Array.from({ length: 500 }, (_, i) => ({ role: 'user', content: `step ${i} ${'x'.repeat(5000)}` }));
  const lines = afterDigest(many).split('\n');
  t.equal(lines.length, MAX_LINES, 'the newest lines kept');
  t.match(lines.at(-1), /step 499/);
});

t.test(
  'the task block: what the user typed in the turn kept before the summary, carried as it is through later answers',
  async (t) => {
    const task = 'Survey the sixty module listings, task LS-4217.';
    const first = [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>\nAttribution lines.\n</system-reminder>' },
          { type: 'text', text: task },
        ],
      },
      { role: 'system', content: 'Environment.' },
    ];
    const block = taskBlock(first);
    t.equal(block, `${TASK_HEADING}\n- User: ${task}`, 'the injected context block left out, the system message too');
    t.equal(taskBlock([]), '', 'no turn kept: no block');

    // Each answer becomes the first message of the agent's compacted history (Claude Code wraps it).
    let head: unknown[] = first;
    for (let k = 0; k < 6; k++) {
      const prepared = {
        summary: `## Goal and constraints\nSummary ${k}. ${'words '.repeat(800)}`,
        artifactId: null,
        after: '',
        recallTool: false,
      };
      const answer = claudeCodeSummaryText({ ...prepared, task: taskBlock(head) });
      head = [
        {
          role: 'user',
          content: `This session is being continued from a previous conversation.\n\nSummary:\n${answer}\n\nContinue.`,
        },
      ];
    }
    t.equal(taskBlock(head), block, 'six compactions later, the same block: the task neither lost nor nested');
    const codex = codexSummaryText({
      summary: '## Goal and constraints\nCount.',
      artifactId: null,
      after: '',
      recallTool: false,
      task: block,
    });
    t.ok(codex.startsWith(block), "Codex's answer opens with it");
    // Codex keeps the user's own messages beside the summary message: each line once.
    const codexHead = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: task }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `Another model started.\n${codex}` }] },
    ];
    t.equal(taskBlock(codexHead), block);
  },
);

t.test('the summarised history leaves out the instruction, and keeps Claude Code’s tool results before it', async (t) => {
  const claude = [
    { role: 'user', content: 'task' },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'a', content: 'out' },
        { type: 'text', text: 'instruction' },
      ],
    },
  ];
  t.same(summarisedHistory({ agent: 'claude-code', form: 'summary', stream: true }, claude), [
    { role: 'user', content: 'task' },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'out' }] },
  ]);
  const codex = [{ type: 'message', role: 'user', content: 'task' }, { type: 'compaction_trigger' }];
  t.same(summarisedHistory({ agent: 'codex', form: 'trigger', stream: true }, codex), [codex[0]]);
});
