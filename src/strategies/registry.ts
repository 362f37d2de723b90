import { compactStrategy } from './compact.js';
import { fitStrategy } from './fit/index.js';
import { windowStrategy } from './sliding-window.js';
import { summarizeStrategy } from './summarize/index.js';

/**
 * Every strategy, by kind: the only list of them. Each one's endpoint (`POST /v1/{kind}`) is
 * derived from it: its schemas (`schemas/strategies.ts`), its operation (`service/operations.ts`)
 * and its route (`routes/strategies.ts`), in this order.
 */
export const STRATEGIES = {
  window: windowStrategy,
  compact: compactStrategy,
  summarize: summarizeStrategy,
  fit: fitStrategy,
} as const;

export type StrategyKind = keyof typeof STRATEGIES;

export const STRATEGY_KINDS = Object.keys(STRATEGIES) as StrategyKind[];
