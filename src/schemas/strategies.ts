import { z } from 'zod';
import { STRATEGIES, type StrategyKind } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

/** What a strategy's endpoint is made of: its options and its own response fields. */
interface Declared<Options extends z.ZodObject, Response extends z.ZodRawShape> {
  readonly options: Options;
  readonly response: Response;
  readonly docs: { readonly returns: string };
}

const titled = (kind: string): string => kind.charAt(0).toUpperCase() + kind.slice(1);

/**
 * A strategy endpoint's request and response schemas: the common history fields plus the
 * strategy's options, and the common response fields plus its own (`WindowRequest`,
 * `WindowResponse`, … in the OpenAPI document).
 */
function endpointSchemas(kind: string, strategy: Declared<z.ZodObject, z.ZodRawShape>) {
  return {
    request: z.strictObject({ ...HistoryFields, ...strategy.options.shape }).meta({ id: `${titled(kind)}Request` }),
    response: z
      .object({ ...StrategyResponseFields, ...strategy.response })
      .meta({ id: `${titled(kind)}Response`, description: strategy.docs.returns }),
  };
}

type Registry = typeof STRATEGIES;
/** Every strategy endpoint's schemas, by kind, derived from the registry. */
export const STRATEGY_SCHEMAS = Object.fromEntries(
  Object.entries(STRATEGIES).map(([kind, strategy]) => [kind, endpointSchemas(kind, strategy)]),
) as Record<StrategyKind, ReturnType<typeof endpointSchemas>>;

/** A strategy endpoint's request body, as a client writes it. */
export type StrategyRequest<K extends StrategyKind> = z.input<z.ZodObject<typeof HistoryFields>> &
  z.input<Registry[K]['options']>;
/** A strategy endpoint's response body. */
export type StrategyAnswer<K extends StrategyKind> = z.output<z.ZodObject<typeof StrategyResponseFields>> &
  z.output<z.ZodObject<Registry[K]['response']>>;
