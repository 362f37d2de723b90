import { z } from 'zod';
import { STRATEGIES, STRATEGY_KINDS, type StrategyKind } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

/** What each strategy endpoint's 200 answer is (its response schema's description). */
const RETURNS: Record<StrategyKind, string> = {
  window:
    "The history with its oldest messages dropped, in the request's format (unchanged, with `reason`, when nothing applied): what happened to each message, occupancy before and after, and what was dropped.",
  compact: "The compacted history in the request's format, each placeholder naming its original in `artifacts`.",
  summarize:
    "The history with its older range replaced by a summary, in the request's format: the summary (`summary`), what happened to each message, occupancy before and after, and the summarizer's bill.",
  fit: "The history brought under the target in the request's format (or unchanged, with `reason` and `call_again_at`, when no reduction pays yet): each stage, what happened to each message, and the cost decision.",
};

/** What a strategy's endpoint is made of: its options and its own response fields. */
interface Declared<Options extends z.ZodRawShape = z.ZodRawShape, Response extends z.ZodRawShape = z.ZodRawShape> {
  readonly options: z.ZodObject<Options, z.core.$strict>;
  readonly response: Response;
}

/**
 * The order a response's fields are read in (and serialized: the serializer follows the schema):
 * the verdict first, then the strategy's own details, then the arrays as long as the history.
 */
const FIRST = ['applied', 'reason', 'cost', 'call_again_at', 'tokens', 'target', 'usage', 'warnings', 'fallback', 'format'];
const LAST = ['actions', 'messages'];
const rank = (key: string): number =>
  FIRST.includes(key) ? FIRST.indexOf(key) - FIRST.length : LAST.includes(key) ? 1 + LAST.indexOf(key) : 0;

function readingOrder<Shape extends z.ZodRawShape>(shape: Shape): Shape {
  return Object.fromEntries(Object.entries(shape).sort(([a], [b]) => rank(a) - rank(b))) as Shape;
}

const titled = (kind: string): string => kind.charAt(0).toUpperCase() + kind.slice(1);

/**
 * A strategy endpoint's request and response schemas: the common history fields plus the
 * strategy's options, and the common response fields plus its own (`WindowRequest`,
 * `WindowResponse`, … in the OpenAPI document).
 */
function endpointSchemas<Options extends z.ZodRawShape, Response extends z.ZodRawShape>(
  kind: StrategyKind,
  strategy: Declared<Options, Response>,
) {
  return {
    request: z.strictObject({ ...HistoryFields, ...strategy.options.shape }).meta({ id: `${titled(kind)}Request` }),
    response: z
      .object(readingOrder({ ...StrategyResponseFields, ...strategy.response }))
      .meta({ id: `${titled(kind)}Response`, description: RETURNS[kind] }),
  };
}

/** A strategy endpoint's schemas, typed by its strategy's options and response fields. */
export type StrategySchemas<K extends StrategyKind> = ReturnType<
  typeof endpointSchemas<Registry[K]['options']['shape'], Registry[K]['response']>
>;
type Registry = typeof STRATEGIES;

/** Every strategy endpoint's schemas, by kind. */
export const STRATEGY_SCHEMAS = Object.fromEntries(
  STRATEGY_KINDS.map((kind) => [kind, endpointSchemas(kind, STRATEGIES[kind] as Declared)]),
) as {
  [K in StrategyKind]: StrategySchemas<K>;
};
