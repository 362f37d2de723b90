import { bypassReason, type ClientRecord, quantile, type UpstreamRecord } from './analysis.js';
import type { SummarizerCall } from './summarizer.js';

/**
 * Anthropic's prices relative to one uncached input token: cache reads 0.1×, cache writes 1.25×,
 * output 5×. Every prompt token not read from the cache is written to it (Claude Code marks its
 * newest message each call; the same rule is applied to Codex to compare like with like).
 */
export const PRICES = { input: 1, cacheRead: 0.1, cacheWrite: 1.25, output: 5 } as const;

/** A session's bill in units (one unit: one uncached input token), by part. */
export interface Bill {
  cacheRead: number;
  cacheWrite: number;
  output: number;
  /** Compactor's summarizer calls: their input at 1×, their output at 5×. */
  summarizer: number;
  total: number;
}

/** A hold at least this long while a summarizer call ran is reported (`heldWhileSummarizing`). */
export const HOLD_FLOOR_MS = 200;

/**
 * A hold at least this long that ends after a summarizer call ended counts as waiting on it
 * (`waitedOnSummarizer`), as does any hold that contains a whole summarizer call (a forced
 * summary). Long enough that a slow reduction beside a background summarizer call is not taken
 * for a wait; the summarizer takes 1.5 s.
 */
export const WAIT_FLOOR_MS = 1000;

/** Prices a session: its upstream requests (the agent's own compaction requests included) and Compactor's summarizer calls. */
export function billOf(upstream: readonly UpstreamRecord[], summarizer: readonly SummarizerCall[]): Bill {
  let cacheRead = 0;
  let cacheWrite = 0;
  let output = 0;
  for (const u of upstream) {
    if (!u.usage) continue;
    cacheRead += u.usage.cacheRead * PRICES.cacheRead;
    cacheWrite += (u.usage.input - u.usage.cacheRead) * PRICES.cacheWrite;
    output += u.usage.output * PRICES.output;
  }
  let summary = 0;
  for (const s of summarizer)
    summary += Math.ceil(s.promptChars / 4) * PRICES.input + Math.ceil(s.outputChars / 4) * PRICES.output;
  const round = (n: number) => Math.round(n);
  return {
    cacheRead: round(cacheRead),
    cacheWrite: round(cacheWrite),
    output: round(output),
    summarizer: round(summary),
    total: round(cacheRead + cacheWrite + output + summary),
  };
}

/** What one session measured, in the figures the issue names. */
export interface SessionFigures {
  /** Upstream model requests (the agent's calls the provider received, its compaction requests included). */
  upstream: number;
  /** Model calls the agent made. */
  agentCalls: number;
  bill: Bill;
  /** Upstream requests that did not extend the previous request of their conversation (cache markers ignored). */
  prefixBreaks: number;
  /** Upstream requests holding the task text. */
  taskPresent: number;
  /** Upstream requests without it, by provider sequence number. */
  taskMissing: number[];
  maxTokens: number;
  /** Upstream requests over the window, by provider sequence number. */
  overWindow: number[];
  /** Bypass reasons the agent was told, with their counts. */
  bypass: Record<string, number>;
  /** Outcomes (`x-compactor`'s first word) with their counts. */
  outcomes: Record<string, number>;
  /** Time from the relay to the provider, over every upstream request (ms). */
  heldP50: number | undefined;
  heldP99: number | undefined;
  heldMax: number | undefined;
  /** Upstream requests held at least `HOLD_FLOOR_MS` while a summarizer call ran (reported; not all of them waited on it). */
  heldWhileSummarizing: number[];
  /** Upstream requests that waited on a summarizer call: one ran whole inside the hold, or ended in a hold of `WAIT_FLOOR_MS` or more. */
  waitedOnSummarizer: number[];
  summarizerCalls: number;
  /** The agent's own compaction requests: how long each took to answer through the relay, and whether the provider got it. */
  compactions: { durationMs: number | undefined; forwarded: boolean; outcome: string | undefined }[];
  /** The provider's answer time of each compaction request it received (ms). */
  providerCompactionMs: number[];
}

function count(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** A session's figures from its records, against `window` tokens. */
export function figuresOf(
  upstream: readonly UpstreamRecord[],
  client: readonly ClientRecord[],
  summarizer: readonly SummarizerCall[],
  window: number,
): SessionFigures {
  const held = upstream.map((u) => u.heldMs).filter((ms): ms is number => ms !== undefined);
  const long = (u: UpstreamRecord) => (u.heldMs ?? 0) >= HOLD_FLOOR_MS;
  const reasons = client.map((c) => bypassReason(c.compactor)).filter((r): r is string => r !== undefined);
  return {
    upstream: upstream.length,
    agentCalls: client.length,
    bill: billOf(upstream, summarizer),
    prefixBreaks: upstream.filter((u) => u.extendsPrevious === false).length,
    taskPresent: upstream.filter((u) => u.taskPresent).length,
    taskMissing: upstream.filter((u) => !u.taskPresent).map((u) => u.seq),
    maxTokens: Math.max(0, ...upstream.map((u) => u.tokens)),
    overWindow: upstream.filter((u) => u.tokens > window).map((u) => u.seq),
    bypass: count(reasons),
    outcomes: count(client.map((c) => (c.compactor ?? 'none').split(';')[0] ?? 'none')),
    heldP50: quantile(held, 0.5),
    heldP99: quantile(held, 0.99),
    heldMax: held.length > 0 ? Math.max(...held) : undefined,
    heldWhileSummarizing: upstream.filter((u) => long(u) && u.summarizerRunning).map((u) => u.seq),
    waitedOnSummarizer: upstream
      .filter((u) => u.summarizerInside || (u.summarizerEnded && (u.heldMs ?? 0) >= WAIT_FLOOR_MS))
      .map((u) => u.seq),
    summarizerCalls: summarizer.length,
    compactions: client
      .filter((c) => c.kind === 'compaction')
      .map((c) => ({ durationMs: c.durationMs, forwarded: c.forwarded, outcome: c.compactor })),
    providerCompactionMs: upstream
      .filter((u) => u.kind === 'compaction')
      .map((u) => u.answerMs)
      .filter((ms): ms is number => ms !== undefined),
  };
}
