import { compactStrategy } from './compact.js';
import { fitStrategy } from './fit/index.js';
import { windowStrategy } from './sliding-window.js';
import { summarizeStrategy } from './summarize/index.js';

/** Every strategy, by kind: the only list of them. Endpoint schemas are derived from it. */
export const STRATEGIES = {
  window: windowStrategy,
  compact: compactStrategy,
  summarize: summarizeStrategy,
  fit: fitStrategy,
} as const;

export type StrategyKind = keyof typeof STRATEGIES;
