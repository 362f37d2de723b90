import t from 'tap';
import type { CallOutcome } from '../../src/proxy/outcome.js';
import { proxyEntry, usageParts } from '../../src/proxy/record.js';

t.test('usage in disjoint parts, as each provider reports it', async (t) => {
  t.same(
    usageParts({ input_tokens: 10, cache_read_input_tokens: 300, cache_creation_input_tokens: 40, output_tokens: 7 }),
    { uncached: 10, cache_read: 300, cache_write: 40, output: 7 },
    'Anthropic: input is uncached already',
  );
  t.same(
    usageParts({ prompt_tokens: 500, prompt_tokens_details: { cached_tokens: 384 }, completion_tokens: 9 }),
    { uncached: 116, cache_read: 384, cache_write: 0, output: 9 },
    'OpenAI Chat: cached tokens taken out of the prompt',
  );
  t.same(
    usageParts({ input_tokens: 200, input_tokens_details: { cached_tokens: 128 }, output_tokens: 5 }),
    { uncached: 72, cache_read: 128, cache_write: 0, output: 5 },
    'OpenAI Responses',
  );
  t.same(
    usageParts({ promptTokenCount: 90, cachedContentTokenCount: 60, candidatesTokenCount: 3, thoughtsTokenCount: 4 }),
    { uncached: 30, cache_read: 60, cache_write: 0, output: 7 },
    'Gemini: thoughts are output',
  );
  t.same(usageParts({ input_tokens: 'x' }), { uncached: 0, cache_read: 0, cache_write: 0, output: 0 }, 'no number, no tokens');
});

t.test('an entry from the call’s outcome: counts only', async (t) => {
  const call: CallOutcome = {
    provider: 'anthropic',
    model: 'claude-opus-4-8',
    conversation: '0123456789abcdef',
    outcome: 'reduced',
    reason: undefined,
    tokens: { before: 900, after: 300, saved: 600 },
    prefix: 'broken',
    ms: 12.34,
  };
  const made = {
    brokenAt: 3,
    rewritten: 250,
    artifacts: [{ id: 'art_000000000000000000000001', kind: 'tool_result', tool_name: 'Bash', message_index: 4, tokens: 500 }],
    summary: {
      id: 'art_000000000000000000000002',
      text: 'the summary',
      message_index: 1,
      covered_messages: 6,
      summarizer: 'llm' as const,
    },
  };
  const entry = proxyEntry(call, { removed: 600, window: 200_000, made }, 'art_000000000000000000000003');
  t.match(entry, {
    via: 'proxy',
    provider: 'anthropic',
    format: 'anthropic',
    model: 'claude-opus-4-8',
    outcome: 'reduced',
    reason: null,
    tokens: { client: 900, forwarded: 300, window: 200_000, rewritten: 250 },
    prefix: { kept: false, broken_at: 3 },
    ms_before_forwarding: 12.34,
    artifacts: made.artifacts,
    summaries: [
      { id: made.summary.id, text_id: 'art_000000000000000000000003', message_index: 1, covered_messages: 6, summarizer: 'llm' },
    ],
  });
  t.notMatch(JSON.stringify(entry), /the summary/, 'the summary text is not in the entry: its id is');
  t.match(
    proxyEntry({ ...call, outcome: 'kept', tokens: { before: 400, after: 400, saved: 0 }, prefix: 'kept' }, { removed: 600 }),
    {
      tokens: { client: 1000, forwarded: 400, rewritten: 0 },
      prefix: { kept: true, broken_at: null },
      artifacts: [],
      summaries: [],
    },
  );
  t.match(
    proxyEntry(
      { ...call, outcome: 'bypass', reason: 'budget', tokens: { before: 0, after: 0, saved: 0 }, prefix: 'kept' },
      { removed: 600 },
    ),
    { outcome: 'bypass', reason: 'budget', prefix: { kept: true }, tokens: { client: 0, forwarded: 0, window: null } },
  );
  t.equal(proxyEntry({ ...call, outcome: 'answered' }).outcome, 'compaction-answered');
});
