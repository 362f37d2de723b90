/**
 * A Claude Code-shaped Anthropic Messages request for bench/proxy.mjs, every text our own
 * (pseudo-random words from a fixed seed, never a captured prompt): `system` as two text blocks
 * (a billing-style header line, then a long agent prompt with a cache breakpoint), a tool set
 * with long descriptions and JSON schemas, `metadata.user_id`, `stream: true`, `max_tokens`
 * 32,000, and a history of Bash steps (tool_use, tool_result with a command's output) after a
 * task wrapped in a reminder block, the last result holding the moving cache breakpoint. Its size
 * is about `bytes` (default 100 KB), with the headers Claude Code sends next to it.
 */

const WORDS =
  'the of file test line run build check value error output module function config path result return call list data index agent tool shell command read write edit search find pattern match source target branch commit change update parse token cache window history message summary request answer stream event client server proxy upstream timeout retry limit budget policy option default'.split(
    ' ',
  );

/** A deterministic generator of words (a linear congruential sequence from `seed`). */
function words(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      out.push(WORDS[(x >>> 8) % WORDS.length]);
    }
    return out.join(' ');
  };
}

/** About `chars` characters of prose in sentences, from `say`. */
function prose(say, chars) {
  const parts = [];
  let n = 0;
  while (n < chars) {
    const s = `${say(12)}.`;
    parts.push(s.charAt(0).toUpperCase() + s.slice(1));
    n += s.length + 1;
  }
  return parts.join(' ');
}

/** A command's output: numbered lines of words. */
function output(say, lines) {
  return Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}  ${say(8)}`).join('\n');
}

const TOOL_NAMES = ['Bash', 'Read', 'Edit', 'Write', 'Glob', 'Grep', 'Task', 'TodoWrite', 'WebFetch', 'NotebookEdit'];

/**
 * The request body (an object) and its headers. `steps` Bash rounds are added until the body
 * reaches about `bytes`; `session` names the conversation (header and `metadata.user_id`).
 */
export function claudeCodeRequest({ bytes = 100_000, session = 'bench-session', model = 'claude-sonnet-4-5' } = {}) {
  const say = words(7);
  const system = [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=0.0.0; cc_entrypoint=bench' },
    { type: 'text', text: prose(say, 14_000), cache_control: { type: 'ephemeral' } },
  ];
  const tools = TOOL_NAMES.map((name) => ({
    name,
    description: prose(say, 2400),
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: prose(say, 160) },
        description: { type: 'string', description: prose(say, 120) },
        timeout: { type: 'number', description: prose(say, 80) },
      },
      required: ['command'],
      additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
  }));
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'text', text: `<system-reminder>\n${prose(say, 1200)}\n</system-reminder>` },
        { type: 'text', text: prose(say, 300) },
      ],
    },
  ];
  const body = { model, max_tokens: 32_000, stream: true, system, tools, metadata: { user_id: `user_bench_session_${session}` } };
  for (let s = 0; JSON.stringify({ ...body, messages }).length < bytes; s++) {
    const id = `toolu_bench${String(s).padStart(4, '0')}`;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: prose(say, 160) },
        { type: 'tool_use', id, name: 'Bash', input: { command: `grep -rn ${say(1)} src | head -40`, description: say(4) } },
      ],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: output(say, 40) }] });
  }
  const last = messages.at(-1).content.at(-1);
  last.cache_control = { type: 'ephemeral' };
  const headers = {
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    'x-api-key': 'sk-ant-bench-not-a-key',
    'x-claude-code-session-id': session,
    'user-agent': 'bench-agent/1.0 (external, cli)',
    'x-app': 'cli',
  };
  return { body: { ...body, messages }, headers };
}
