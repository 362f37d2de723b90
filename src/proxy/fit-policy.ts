import type { ConversationState, RecordedUsage } from './conversation.js';
import type { Reducible } from './providers.js';

/**
 * The proxy's fit request and its rules over what fit answers (issue 37): where it aims, what it
 * keeps, and which reductions that pay are still not sent (too small, too soon after a break).
 * The reduction (`reduce.ts`) applies them; nothing here reads the store.
 */

/** What these rules read of fit's answer. */
export interface FitVerdict {
  readonly tokens: { readonly saved: number };
  readonly target?: number;
  readonly cost?: { readonly decision?: string };
}

/**
 * Where the proxy's fit aims when its options do not say: half the window, a reduction forced
 * past 80% of it (before the agents' own compaction, which Claude Code runs near the window's end).
 */
export const PROXY_TARGET = { target_fraction: 0.5 } as const;
export const PROXY_LIMIT = { limit: { fraction: 0.8 } } as const;
/**
 * What the proxy's compaction keeps of the tool results when its options do not say: the newest
 * one (fit's default keeps three). A reduction clears what came before it, and with reductions at
 * most every `PROXY_CALLS_BETWEEN_BREAKS` calls the model still sees its newest one to four results
 * whole; every result cleared leaves a placeholder naming its original (restorable). What each
 * kept result costs is its re-write at every break (the write price, 12.5× a cached read at
 * Anthropic's) and its read on every call: keeping three made Claude Code's proxied bill 1.03× its
 * own compaction's, keeping one 0.71× (bench/RESULTS.md, "Agents"). Results under `min_tokens`
 * (100) are never cleared.
 */
export const PROXY_KEEP_TOOL_USES = 1;

/** No proxied request waits on the summarizer: with no LLM summary ready, the extractive one stands in. */
export const PROXY_NO_WAIT = { summarizer_wait: 'never' } as const;

/**
 * The least a reduction fit makes because it pays (not one forced past the limit) must free
 * through the proxy, as a share of fit's target (10% of the window under `PROXY_TARGET`): as
 * Anthropic's `clear_at_least`. A smaller one that breaks the cached prefix is not sent; the
 * history goes on extended, so that the calls after a reduction extend its prefix rather than
 * break it again for a few tokens each (issue 37: at most one break per 4 calls).
 */
export const PROXY_CLEAR_AT_LEAST = 0.2;

/**
 * The fewest model calls between two reductions that break the cached prefix, unless the second
 * is forced (the history past the limit): a reduction that pays sooner waits, the history going on
 * extended. Fit's economic batch already spaces them by what a break rewrites; this bounds what it
 * cannot see (a provider's cache is written in blocks and with a premium each time, and Anthropic
 * documents keeping breaks rare): issue 37, at most one break per 4 calls.
 */
export const PROXY_CALLS_BETWEEN_BREAKS = 4;

/** A reduction that pays but frees less than `PROXY_CLEAR_AT_LEAST` of the target (never a forced one, nor one under policy tokens). */
export function tooSmall(value: FitVerdict, policy: unknown): boolean {
  if (policy === 'tokens' || value.cost?.decision !== 'reduce' || typeof value.target !== 'number') return false;
  return value.tokens.saved < PROXY_CLEAR_AT_LEAST * value.target;
}

/** `compact` with the proxy's `keep_tool_uses` where the options give none (nothing when they do). */
function withProxyCompact(compact: unknown): { compact?: Record<string, unknown> } {
  if (compact !== undefined && (typeof compact !== 'object' || compact === null || Array.isArray(compact))) return {};
  const given = (compact ?? {}) as Record<string, unknown>;
  return given.keep_tool_uses === undefined ? { compact: { keep_tool_uses: PROXY_KEEP_TOOL_USES, ...given } } : {};
}

/** The fit request for an upstream history: the body's system and tools counted, the model's window, the last usage. */
export function fitRequest(
  reducible: Reducible,
  body: Record<string, unknown>,
  messages: unknown[],
  usage: RecordedUsage | undefined,
  options: Record<string, unknown>,
): Record<string, unknown> {
  const system = reducible.systemOf(body);
  const tools = reducible.toolsOf(body);
  const model = reducible.pathModel ?? (typeof body.model === 'string' ? body.model : undefined);
  const request: Record<string, unknown> = {
    ...(options.target_tokens === undefined && options.target_fraction === undefined ? PROXY_TARGET : {}),
    ...(options.limit === undefined ? PROXY_LIMIT : {}),
    ...PROXY_NO_WAIT,
    ...options,
    ...withProxyCompact(options.compact),
    messages,
    format: reducible.format,
    ...(model ? { model } : {}),
    ...(typeof system === 'string' || (typeof system === 'object' && system !== null) ? { system } : {}),
    ...(tools ? { tools } : {}),
  };
  // The usage covers the previous upstream history and the reply: only when those are all here.
  if (usage && usage.covered <= messages.length) request.usage = { ...usage.usage, messages_covered: usage.covered };
  return request;
}

/** Whether a break now comes too soon after the previous one (`PROXY_CALLS_BETWEEN_BREAKS`); never for a forced one. */
export function tooSoon(value: FitVerdict, state: ConversationState | undefined, calls: number): boolean {
  if (value.cost?.decision !== 'reduce' || state?.brokeAt === undefined) return false;
  return calls - state.brokeAt < PROXY_CALLS_BETWEEN_BREAKS;
}
