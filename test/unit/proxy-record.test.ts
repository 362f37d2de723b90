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
  t.match(proxyEntry(call), {
    via: 'proxy',
    provider: 'anthropic',
    format: 'anthropic',
    model: 'claude-opus-4-8',
    outcome: 'reduced',
    reason: null,
    tokens: { client: 900, forwarded: 300 },
    prefix: { kept: false },
    ms_before_forwarding: 12.34,
  });
  t.match(proxyEntry({ ...call, outcome: 'bypass', reason: 'budget', prefix: 'kept' }), {
    outcome: 'bypass',
    reason: 'budget',
    prefix: { kept: true },
  });
  t.equal(proxyEntry({ ...call, outcome: 'answered' }).outcome, 'compaction-answered');
});
