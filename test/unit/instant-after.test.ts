import fc from 'fast-check';
import t from 'tap';
import { afterDigest, MAX_LINES, USER_CHARS } from '../../src/proxy/compaction/after.js';
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
