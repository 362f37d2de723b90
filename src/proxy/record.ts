import pTimeout, { TimeoutError } from 'p-timeout';
import { CompactorError } from '../errors.js';
import type { Caller } from '../service/artifacts.js';
import type { CallInput, UsageInput } from '../service/conversation-view.js';
import { summaryEntries } from '../service/fit-record.js';
import type { ProxyContext } from './context.js';
import type { CallOutcome } from './outcome.js';
import type { Reduction } from './reduce.js';

/**
 * The proxy's part of the conversation record (`service/conversations.ts`): each proxied model
 * call that names a conversation is recorded from its outcome (counts and ids, never content), in
 * the caller's scope, and priced when its answer's usage is read. Neither write holds nor fails
 * the call: each is bounded, and a failure is logged as a reason, never content.
 */

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const sub = (value: unknown, key: string): number =>
  typeof value === 'object' && value !== null ? num((value as Record<string, unknown>)[key]) : 0;

/** What the proxy knows of a call beyond its outcome: the window fit measured against, what a reduction made. */
export type CallDetail = Partial<Pick<Reduction, 'window' | 'made' | 'removed'>>;

/**
 * A call's record entry, from the outcome the proxy reported for it and what its reduction made
 * (`textId`: where the summary's text was kept, or null).
 */
export function proxyEntry(call: CallOutcome, detail: CallDetail = {}, textId: string | null = null): CallInput {
  const made = detail.made;
  const summary = made?.summary;
  return {
    via: 'proxy',
    provider: call.provider,
    format: call.provider,
    model: call.model ?? null,
    outcome: call.outcome === 'answered' ? 'compaction-answered' : call.outcome === 'passthrough' ? 'unchanged' : call.outcome,
    reason: call.reason ?? null,
    // The client had what went on plus what the reductions in effect left out (this one's and the
    // earlier ones it extends); a bypass was not counted (0 and 0).
    tokens: {
      client: call.outcome === 'bypass' ? 0 : call.tokens.after + (detail.removed ?? 0),
      forwarded: call.tokens.after,
      window: detail.window ?? null,
      rewritten: call.prefix === 'broken' ? (made?.rewritten ?? 0) : 0,
    },
    prefix: { kept: call.prefix === 'kept', broken_at: call.prefix === 'broken' ? (made?.brokenAt ?? null) : null },
    ms_before_forwarding: call.ms,
    artifacts: made ? [...made.artifacts] : [],
    summaries: summaryEntries(summary, textId),
  };
}

/**
 * A provider's usage object in disjoint parts: Anthropic's input is already uncached (its cache
 * fields apart); OpenAI's prompt or input tokens include the cached ones, as Gemini's prompt
 * includes its cached content: subtracted.
 */
export function usageParts(usage: Record<string, unknown>): UsageInput {
  if ('cache_read_input_tokens' in usage || 'cache_creation_input_tokens' in usage) {
    return {
      uncached: num(usage.input_tokens),
      cache_read: num(usage.cache_read_input_tokens),
      cache_write: num(usage.cache_creation_input_tokens),
      output: num(usage.output_tokens),
    };
  }
  if ('promptTokenCount' in usage) {
    const cached = num(usage.cachedContentTokenCount);
    const output = num(usage.candidatesTokenCount) + num(usage.thoughtsTokenCount);
    return { uncached: Math.max(0, num(usage.promptTokenCount) - cached), cache_read: cached, cache_write: 0, output };
  }
  const chat = 'prompt_tokens' in usage;
  const prompt = chat ? num(usage.prompt_tokens) : num(usage.input_tokens);
  const cached = chat ? sub(usage.prompt_tokens_details, 'cached_tokens') : sub(usage.input_tokens_details, 'cached_tokens');
  const output = chat ? num(usage.completion_tokens) : num(usage.output_tokens);
  return { uncached: Math.max(0, prompt - cached), cache_read: cached, cache_write: 0, output };
}

/** Why a record write failed, as a log line may say it. */
const reasonOf = (error: unknown): string =>
  error instanceof TimeoutError ? 'budget' : error instanceof CompactorError ? error.code : 'internal';

/**
 * Records the call (fire-and-forget, bounded) when it names a conversation; returns what to do
 * with its answer's usage (price it against the recorded call), or undefined when not recorded.
 */
export function recordCall(
  ctx: ProxyContext,
  caller: Caller,
  call: CallOutcome,
  detail: CallDetail = {},
): ((usage: Record<string, unknown>) => void) | undefined {
  const conversation = call.conversation;
  if (conversation === undefined || call.outcome === 'passthrough') return undefined;
  const { conversations } = ctx.app.compactor;
  const milliseconds = Math.max(1000, ctx.config.COMPACTOR_PROXY_BUDGET_MS);
  const warn = (error: unknown, msg: string) => {
    ctx.app.log.warn({ reason: reasonOf(error) }, msg);
    return null;
  };
  // The summary's text is kept first (where the page links to it), then the entry naming it.
  const text = detail.made?.summary?.text;
  const entry = (async () => {
    const textId = text === undefined ? null : await conversations.keepSummaryText(caller, text);
    return proxyEntry(call, detail, textId);
  })();
  const id = pTimeout(
    entry.then((e) => conversations.record(caller, conversation, e)),
    { milliseconds },
  ).catch((error: unknown) => warn(error, 'proxy: call not recorded'));
  return (usage) => {
    void id
      .then(async (callId) => {
        if (callId === null) return;
        await pTimeout(conversations.usage(caller, conversation, callId, await entry, usageParts(usage)), { milliseconds });
      })
      .catch((error: unknown) => warn(error, 'proxy: call usage not recorded'));
  };
}
