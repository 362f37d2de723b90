import type { z } from 'zod';
import type { BilledUsage } from '../contract/parts.js';
import type { Evaluation } from '../history/plan/evaluate.js';
import type { CacheState } from './cache.js';
import type { Prices } from './prices.js';

/** What a request's cost decisions are made against. */
export interface CostModel {
  /** The agent's model's prices. */
  readonly prices: Prices;
  /** The summarizer's prices, in the same unit. */
  readonly summarizer: Prices;
  readonly cache: CacheState;
  /** The coming call's input as is (the history's occupancy). */
  readonly occupancy: number;
  /** Tokens before the messages (system, tools, framing): never edited, always cached after the first call. */
  readonly fixed: number;
  /** Expected model calls from the coming one on (at least 1). */
  readonly horizon: number;
  readonly horizonSource: 'request' | 'estimated';
  /** How many tokens the history grows by per call, on average so far (what becomes clearable next). */
  readonly growth: number;
  /** Model calls the run has made so far (what the horizon was estimated from). */
  readonly calls: number;
}

/** One candidate reduction, priced (docs/strategies.md, "Cost"). */
export interface Estimate {
  /** Tokens of the coming call written to the cache that as is would have been read from it. */
  readonly rewriteTokens: number;
  /** What the coming call costs more for them, net of what it reads less (can be negative). */
  readonly rewriteCost: number;
  /** The summarizer's bill for the reduction (estimated before its calls, real after). */
  readonly summarizerCost: number;
  /** What every call from the coming one on pays less: the tokens removed, at the cached price. */
  readonly savingPerCall: number;
  /** Calls until the reduction has paid for itself; null when it never does. */
  readonly paybackCalls: number | null;
  /** Saving over the horizon minus what the reduction costs: it pays when positive. */
  readonly net: number;
  /** The coming call's input bill as is and reduced. */
  readonly nextCall: { readonly asIs: number; readonly reduced: number };
  /** Tokens removed. */
  readonly saved: number;
  /**
   * The economic batch: the saving below which waiting for more to clear is cheaper per call than
   * breaking the cache now (0 when the reduction costs nothing to make).
   */
  readonly batch: number;
}

const M = 1_000_000;

/** The input bill of one call: `read` tokens from the cache, `written` tokens written to it (or sent uncached). */
export function inputBill(prices: Prices, read: number, written: number): number {
  return (read * prices.cached + Math.max(0, written) * prices.write) / M;
}

/** What summarizer calls billed, at the summarizer's prices (no write premium: one-off calls). */
export function usageCost(
  prices: Prices,
  usage: Pick<z.output<typeof BilledUsage>, 'input_tokens' | 'output_tokens' | 'cached_input_tokens'>,
): number {
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens);
  return ((usage.input_tokens - cached) * prices.input + cached * prices.cached + usage.output_tokens * prices.output) / M;
}

/**
 * Prices a reduction from its evaluation: the coming call reads from the cache only up to the
 * first message the reduction changes (and no further than the cache held), and writes the rest;
 * every call from then on reads `saved` fewer tokens from the cache. It pays when the saving over
 * the horizon exceeds what the coming call pays more plus the summarizer's bill.
 */
export function estimate(model: CostModel, e: Evaluation, summarizerCost: number): Estimate {
  const { cache, occupancy, fixed } = model;
  // Without a cache every call pays the input price for every token: only savings count.
  const prices =
    cache.source === 'disabled' ? { ...model.prices, cached: model.prices.input, write: model.prices.input } : model.prices;
  const saved = Math.max(0, e.saved);
  const after = occupancy - saved;
  const asIs = inputBill(prices, cache.tokens, occupancy - cache.tokens);
  const read = Math.min(cache.tokens, fixed + e.unchangedPrefixTokens);
  const reduced = inputBill(prices, read, after - read);
  const savingPerCall = (saved * prices.cached) / M;
  // Without a cache nothing is rewritten: every token is paid in full either way.
  const rewriteCost = cache.source === 'disabled' ? 0 : reduced - asIs + savingPerCall;
  const cost = rewriteCost + summarizerCost;
  const paybackCalls = cost <= 0 ? 0 : savingPerCall > 0 ? Math.ceil(cost / savingPerCall) : null;
  return {
    batch: economicBatch(model, prices, e, summarizerCost),
    rewriteTokens: Math.max(0, after - read - (occupancy - cache.tokens)),
    rewriteCost,
    summarizerCost,
    savingPerCall,
    paybackCalls,
    net: savingPerCall * model.horizon - cost,
    nextCall: { asIs, reduced },
    saved,
  };
}

/**
 * Whether a reduction is worth making now: it pays over the horizon, waiting for a bigger batch
 * would not be cheaper, and (with the horizon estimated) it pays back within as many calls as the
 * run has made so far, so that it pays at even odds or better: the expected value alone would
 * take long bets that a run ending soon turns into a higher bill.
 */
export function worthIt(e: Estimate, model: CostModel): boolean {
  if (!(e.net > 0 && e.saved >= e.batch)) return false;
  return model.horizonSource === 'request' || (e.paybackCalls ?? Number.POSITIVE_INFINITY) <= Math.max(1, model.calls);
}

/**
 * The economic batch (as in inventory's economic order quantity). Reductions come in cycles:
 * each clears what became clearable since the last one and rewrites the cache from there. The
 * part of a rewrite that grows with the batch (what was appended and is kept) costs the same per
 * call however often the cache is broken; the part that does not, the messages kept after the
 * last change (the next reduction starts in them) plus the summarizer's bill, is paid once per
 * break: `fixed`. Tokens left uncleared cost the cached price on every call, and become clearable
 * at `rate` tokens a call (the share of the edited stretch this reduction frees, times the
 * history's growth per call). Breaking every T calls then costs fixed / T + cached × rate × T / 2
 * per call, least at T* = √(2 fixed / (cached × rate)), that is, with rate × T* tokens to clear.
 * A smaller reduction now only buys more breaks later. 0 when a break costs nothing.
 */
export function economicBatch(model: CostModel, prices: Prices, e: Evaluation, summarizerCost: number): number {
  // (Without a cache `estimate` passes write = cached = input: a break then costs only its summary.)
  const fixed = ((prices.write - prices.cached) * e.unchangedTailTokens) / M + summarizerCost;
  const stretch = model.occupancy - model.fixed - e.unchangedPrefixTokens - e.unchangedTailTokens;
  const share = stretch > 0 ? Math.min(1, Math.max(0, e.saved) / stretch) : 0;
  const rate = share * model.growth;
  if (fixed <= 0 || rate <= 0 || prices.cached <= 0) return 0;
  return Math.ceil(Math.sqrt((2 * fixed * M * rate) / prices.cached));
}

/**
 * The smallest saving that would pay for a rewrite of `rewriteTokens` over the horizon (the
 * break-even batch of `clear_at_least: "auto"`).
 */
export function breakEvenTokens(model: CostModel, rewriteTokens: number, summarizerCost = 0): number {
  const { prices, horizon } = model;
  if (model.cache.source === 'disabled')
    return summarizerCost > 0 ? Math.ceil((summarizerCost * M) / (prices.input * horizon)) : 0;
  // With the whole history cached: saved × cached × horizon > (write − cached) × rewrite + summarizer.
  const perToken = (prices.cached * horizon) / M;
  if (perToken <= 0) return Number.POSITIVE_INFINITY;
  return Math.ceil((((prices.write - prices.cached) * rewriteTokens) / M + summarizerCost) / perToken);
}
