import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import t from 'tap';
import {
  CLAUDE_CODE_SECTIONS,
  type HeaderBag,
  isClaudeCodeInstruction,
  recognizeCompaction,
} from '../../src/proxy/compaction/recognize.js';

const DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/agent-compaction');

interface Captured {
  url: string;
  headers: HeaderBag;
  body: Record<string, unknown> & { messages?: Record<string, unknown>[]; input?: Record<string, unknown>[] };
}

function fixture(name: string): Captured {
  return JSON.parse(readFileSync(resolve(DIR, `${name}.json`), 'utf8')) as Captured;
}

const PROVIDER: Record<string, string> = { claude: 'anthropic', codex: 'openai' };
const recognize = (name: string, change?: (c: Captured) => void) => {
  const c = fixture(name);
  change?.(c);
  return recognizeCompaction(PROVIDER[name.split('-')[0] ?? ''] ?? 'none', c.url, c.headers, c.body);
};

t.test('the captured compaction requests of both agents are recognised, each in its form', async (t) => {
  t.same(recognize('claude-code-auto'), { agent: 'claude-code', form: 'summary', stream: true });
  t.same(recognize('claude-code-manual'), { agent: 'claude-code', form: 'summary', stream: true });
  t.same(recognize('codex-local'), { agent: 'codex', form: 'local', stream: true });
  t.same(recognize('codex-local-sol'), { agent: 'codex', form: 'local', stream: true });
  t.same(recognize('codex-trigger'), { agent: 'codex', form: 'trigger', stream: true });
  // Behind a proxy prefix, with a query: the same.
  const c = fixture('codex-trigger');
  t.same(recognizeCompaction('openai', `/openai${c.url}?x=1`, c.headers, c.body)?.form, 'trigger');
});

t.test('the agents’ ordinary requests, and the turns after a compaction, are not', async (t) => {
  for (const name of ['claude-code-turn', 'codex-turn', 'codex-after-local', 'codex-after-trigger']) {
    t.equal(recognize(name), undefined, name);
  }
});

t.test('a request that talks about compaction in its text, without the markers, is not recognised', async (t) => {
  const userText = (c: Captured, text: string) => {
    c.body.messages?.push({ role: 'user', content: [{ type: 'text', text }] });
  };
  // Claude Code: the user asks for a summary with tags, or names the sections in prose.
  t.equal(
    recognize('claude-code-turn', (c) => userText(c, 'Please compact the context: write a <summary> of our work.')),
    undefined,
  );
  const prose = `Summarize with <analysis> and <summary>: ${CLAUDE_CODE_SECTIONS.join(', ')}.`;
  t.equal(
    recognize('claude-code-turn', (c) => userText(c, prose)),
    undefined,
  );
  // The instruction not last (an answer after it), or not the last block of the message.
  t.equal(
    recognize('claude-code-auto', (c) => c.body.messages?.push({ role: 'assistant', content: 'ok' })),
    undefined,
  );
  t.equal(
    recognize('claude-code-auto', (c) => {
      const last = c.body.messages?.at(-1)?.content as unknown[];
      last.push({ type: 'text', text: 'and one more thing' });
    }),
    undefined,
  );
  // The same instruction from another client (no Claude Code headers) is its user's text.
  t.equal(
    recognize('claude-code-auto', (c) => {
      c.headers = { 'user-agent': 'curl/8' };
    }),
    undefined,
  );
  // Codex: the checkpoint phrase in a user's message of an ordinary turn.
  const codexUser = (c: Captured) =>
    c.body.input?.push({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'You are performing a CONTEXT CHECKPOINT COMPACTION. Summarize.' }],
    });
  t.equal(recognize('codex-turn', codexUser), undefined);
  // The header alone, without the prompt last: not a local compaction.
  t.equal(
    recognize('codex-local', (c) => {
      c.body.input?.pop();
    }),
    undefined,
  );
  // A compaction_trigger that is not last, or a string mentioning it: not the trigger form.
  t.equal(
    recognize('codex-trigger', (c) => {
      c.body.input?.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go on' }] });
    }),
    undefined,
  );
  t.equal(recognizeCompaction('openai', '/v1/responses', {}, { input: 'compaction_trigger' }), undefined);
  // The wrong provider or path.
  const trig = fixture('codex-trigger');
  t.equal(recognizeCompaction('anthropic', trig.url, trig.headers, trig.body), undefined);
  t.equal(recognizeCompaction('openai', '/v1/chat/completions', trig.headers, trig.body), undefined);
  t.equal(recognizeCompaction('gemini', trig.url, trig.headers, trig.body), undefined);
});

t.test(
  'Codex local compaction is read from client_metadata when the header is gone; a malformed header is ignored',
  async (t) => {
    t.same(
      recognize('codex-local', (c) => {
        c.headers = {};
      })?.form,
      'local',
    );
    t.equal(
      recognize('codex-local', (c) => {
        c.headers = { 'x-codex-turn-metadata': '{not json' };
        c.body.client_metadata = {};
      }),
      undefined,
    );
    t.equal(
      recognize('codex-local', (c) => {
        c.headers = { 'x-codex-turn-metadata': JSON.stringify({ request_kind: 'turn' }) };
        c.body.client_metadata = {};
      }),
      undefined,
    );
  },
);

t.test('the older /responses/compact endpoint is recognised by its path', async (t) => {
  const c = fixture('codex-trigger');
  t.same(recognizeCompaction('openai', '/v1/responses/compact', {}, { model: 'm', input: c.body.input?.slice(0, -1) }), {
    agent: 'codex',
    form: 'compact-endpoint',
    stream: false,
  });
});

t.test('the Claude Code instruction check: enough sections in order inside the template, linear on hostile text', async (t) => {
  const template = (titles: readonly string[]) =>
    `<analysis>\n</analysis>\n<summary>\n${titles.map((s, i) => `${i + 1}. ${s}:`).join('\n')}\n</summary>`;
  t.ok(isClaudeCodeInstruction(`head\n${template(CLAUDE_CODE_SECTIONS)}\ntail`));
  t.notOk(isClaudeCodeInstruction(template(CLAUDE_CODE_SECTIONS.slice(0, 5))), 'too few sections');
  t.notOk(isClaudeCodeInstruction(template(CLAUDE_CODE_SECTIONS).replace('<analysis>', '')), 'no analysis tag');
  t.notOk(isClaudeCodeInstruction(template(CLAUDE_CODE_SECTIONS).replace('</summary>', '')), 'template not closed');
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (s) => !isClaudeCodeInstruction(s)),
    { numRuns: 200 },
  );
  // Many unclosed templates: one pass per template, each bounded by the next close tag.
  const hostile = `<analysis>${'\n<summary>\n1. Primary Request and Intent:'.repeat(50_000)}`;
  t.notOk(isClaudeCodeInstruction(hostile));
});
