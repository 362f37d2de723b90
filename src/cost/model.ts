import type { z } from 'zod';
import type { CostSchema } from '../contract/parts.js';
import type { Markers } from '../history/markers.js';
import type { PreparedHistory } from '../history/prepared.js';
import type { ReportedUsage } from '../tokens/occupancy.js';
import { cacheState, callsSoFar } from './cache.js';
import { type CostModel, type Estimate, inputBill } from './estimate.js';
import type { CostRequest } from './fields.js';
import type { Prices, PriceTable } from './prices.js';

/** What a strategy prices with, besides the request's cost fields: given by the Compactor. */
export interface CostEnv {
  readonly table: PriceTable;
  /** The summarizer's prices when configured (COMPACTOR_SUMMARIZER_PRICING). */
  readonly summarizerPrices?: Prices | undefined;
  /** The request's usage of the previous call, if any. */
  readonly usage?: ReportedUsage | undefined;
  /** Tokens before the messages: system, tools, request framing. */
  readonly fixed: number;
  /** The request's model (for the price table). */
  readonly model?: string | undefined;
  /** The caller's markers: only a summary of ours that verifies counts the calls it stands for. */
  readonly markers: Markers;
}

/**
 * The horizon estimator. How long a run goes on is unknown; runs' lengths are heavy-tailed, and a
 * run that has made t calls is as likely to stop within t more as to go past (the Lindy estimate:
 * P(more than x calls left) ≈ t / (t + x)). The horizon is the expected number of calls left
 * under it, counted up to HORIZON_MAX: Σ_{x=1..HORIZON_MAX} t / (t + x), about t · ln(1 + 200 / t)
 * (t = 20: 48 calls; t = 100: 110). What minimizes the expected bill; the even-odds rule of
 * `worthIt` keeps it from betting on a payback longer than the run so far. Override it with
 * `horizon`.
 */
export const HORIZON_MIN = 1;
export const HORIZON_MAX = 200;

export function expectedCallsLeft(callsSoFar: number): number {
  const t = Math.max(1, callsSoFar);
  let expected = 0;
  for (let x = 1; x <= HORIZON_MAX; x++) expected += t / (t + x);
  return Math.max(HORIZON_MIN, Math.floor(expected));
}

/**
 * The summarizer's prices in the agent's unit: configured ones, else the table's row for its
 * model; when neither is known or the units differ, the agent's own prices (the summarizer is
 * priced as the agent's model would be: no write premium, one-off calls).
 */
function summarizerPrices(env: CostEnv, agent: Prices, summarizerModel: string | null): Prices {
  const own = env.summarizerPrices ?? (summarizerModel ? table(env, summarizerModel) : undefined);
  if (own && own.unit === agent.unit) return own;
  return { ...agent, write: agent.input };
}

function table(env: CostEnv, model: string): Prices | undefined {
  const row = env.table.lookup(model);
  return row
    ? { input: row.input, cached: row.cached_input, write: row.input, output: row.output, unit: row.currency, source: 'table' }
    : undefined;
}

/** A request's cost model: its prices, its summarizer's, the cache state, occupancy and horizon. */
export function costModel(h: PreparedHistory, req: CostRequest, env: CostEnv, summarizerModel: string | null): CostModel {
  const prices = env.table.resolve(req.pricing, env.model, h.format.name);
  const cache = cacheState(h, env.fixed, env.usage, req.cache);
  const { total: calls, shown } = callsSoFar(h, env.markers);
  const horizon = req.horizon?.calls ?? expectedCallsLeft(calls);
  return {
    prices,
    summarizer: summarizerPrices(env, prices, summarizerModel),
    cache,
    occupancy: h.occupancy,
    fixed: env.fixed,
    horizon,
    horizonSource: req.horizon ? 'request' : 'estimated',
    growth: (h.occupancy - env.fixed) / Math.max(1, shown),
    calls,
  };
}

export type CostReport = z.output<typeof CostSchema>;

const money = (v: number) => Math.round(v * 1e9) / 1e9;

/** The response's `cost` object for an estimate and the decision taken on it. */
export function costReport(
  model: CostModel,
  e: Estimate,
  decision: CostReport['decision'],
  req: CostRequest,
  more: { limit?: number; break_even_tokens?: number } = {},
): CostReport {
  const ttl = req.cache?.ttl_seconds;
  return {
    unit: model.prices.unit,
    decision,
    pricing: model.prices.source === 'configured' ? 'table' : model.prices.source,
    cache: { source: model.cache.source, cached_tokens: model.cache.tokens, ...(ttl !== undefined ? { ttl_seconds: ttl } : {}) },
    tokens_removed: e.saved,
    batch_tokens: e.batch,
    rewrite_tokens: e.rewriteTokens,
    rewrite_cost: money(e.rewriteCost),
    summarizer_cost: money(e.summarizerCost),
    saving_per_call: money(e.savingPerCall),
    payback_calls: e.paybackCalls,
    horizon_calls: model.horizon,
    calls_so_far: model.calls,
    next_call: { as_is: money(e.nextCall.asIs), reduced: money(e.nextCall.reduced) },
    ...more,
  };
}

/** The estimate of doing nothing: the coming call as is. */
export function nothingEstimate(model: CostModel): Estimate {
  const asIs = inputBill(model.prices, model.cache.tokens, model.occupancy - model.cache.tokens);
  return {
    rewriteTokens: 0,
    rewriteCost: 0,
    summarizerCost: 0,
    savingPerCall: 0,
    paybackCalls: null,
    net: 0,
    nextCall: { asIs, reduced: asIs },
    saved: 0,
    batch: 0,
  };
}
