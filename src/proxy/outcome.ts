import type { BypassReason } from './bypass.js';
import type { ProxyMetrics } from './metrics.js';
import type { ProviderName } from './providers.js';
import type { Reduction } from './reduce.js';

/**
 * What the proxy did with one call, built once per call, just before it is forwarded: what the
 * response headers say (`x-compactor…`) and what the metrics count are read from it, and so is
 * anything else that reports a call. Counts and ids only, never content.
 */
export interface CallOutcome {
  readonly provider: ProviderName;
  readonly model: string | undefined;
  /** The conversation's short id, once it was found (or started). */
  readonly conversation: string | undefined;
  /** `passthrough`: not a model call; `reduced`/`kept`/`unchanged`: as `Reduction.action`; `bypass`: sent as it came; `answered`: an agent's compaction request answered by Compactor. */
  readonly outcome: 'passthrough' | Reduction['action'] | 'bypass' | 'answered';
  /** Why it was bypassed (`x-compactor: bypass; reason=…`). */
  readonly reason: BypassReason | undefined;
  readonly tokens: { readonly before: number; readonly after: number; readonly saved: number };
  /** Whether the prefix already sent upstream stayed as it was (the provider's prompt cache holds). */
  readonly prefix: 'kept' | 'broken';
  /** Milliseconds spent on the call before it was forwarded. */
  readonly ms: number;
  /** An agent's own compaction request: `answered` or `passed_<reason>` (`compactor_proxy_compactions_total`), and its `x-compactor`. */
  readonly compaction?: { readonly label: string; readonly header: string };
}

const NONE = { before: 0, after: 0, saved: 0 } as const;

/**
 * The call's outcome: passthrough without a reduction or a reason, a bypass with a reason (the
 * reduction, if any, only names the conversation), else the reduction's action.
 */
export function outcomeOf(
  provider: ProviderName,
  started: number,
  model: string | undefined,
  reduction: Reduction | undefined,
  reason: BypassReason | undefined,
): CallOutcome {
  const base = { provider, model, conversation: reduction?.conversation, ms: performance.now() - started };
  if (reason !== undefined) return { ...base, outcome: 'bypass', reason, tokens: NONE, prefix: 'kept' };
  if (!reduction) return { ...base, outcome: 'passthrough', reason: undefined, tokens: NONE, prefix: 'kept' };
  return {
    ...base,
    outcome: reduction.action,
    reason: undefined,
    tokens: reduction.tokens,
    prefix: reduction.prefixBreak ? 'broken' : 'kept',
  };
}

/** What the proxy did, in the response headers. */
export function outcomeHeaders(call: CallOutcome): Record<string, string> {
  if (call.compaction) return { 'x-compactor': call.compaction.header };
  const conversation: Record<string, string> = call.conversation ? { 'x-compactor-conversation': call.conversation } : {};
  if (call.outcome === 'bypass') return { 'x-compactor': `bypass; reason=${call.reason}`, ...conversation };
  if (call.outcome === 'passthrough') return { 'x-compactor': 'passthrough' };
  const out: Record<string, string> = { 'x-compactor': call.outcome, ...conversation };
  if (call.tokens.before > 0) out['x-compactor-tokens'] = `${call.tokens.before}->${call.tokens.after}`;
  return out;
}

/** Counts the call in the proxy's metrics. */
export function countOutcome(metrics: ProxyMetrics, call: CallOutcome): void {
  const { provider } = call;
  metrics.requests.inc({ provider, outcome: call.outcome });
  if (call.compaction) metrics.compactions.inc({ provider, outcome: call.compaction.label });
  if (call.reason !== undefined) metrics.bypasses.inc({ provider, reason: call.reason });
  if (call.outcome === 'reduced') metrics.tokensSaved.inc({ provider }, Math.max(0, call.tokens.saved));
  if (call.prefix === 'broken') metrics.prefixBreaks.inc({ provider });
}
