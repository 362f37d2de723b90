import { z } from 'zod';
import type { Pricing } from './fields.js';

/**
 * Prices per million tokens, resolved for one model: where they came from and in what unit
 * (`USD`, another currency, or `relative` when only ratios are known).
 */
export interface Prices {
  readonly input: number;
  readonly cached: number;
  readonly write: number;
  readonly output: number;
  readonly unit: string;
  readonly source: 'request' | 'table' | 'default' | 'configured';
}

/** One row of a price table: a model-name prefix (longest match wins) and its prices in USD per million. */
export const PriceRowSchema = z.strictObject({
  prefix: z.string().min(1).max(128),
  input: z.number().min(0).max(1e6),
  cached_input: z.number().min(0).max(1e6),
  cache_write: z.number().min(0).max(1e6).optional(),
  output: z.number().min(0).max(1e6),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/)
    .default('USD'),
});
export type PriceRow = z.output<typeof PriceRowSchema>;

/** A price file (`COMPACTOR_PRICES_FILE`): rows that replace or add to the built-in ones. */
export const PriceFileSchema = z.strictObject({
  as_of: z.string().max(64).optional(),
  models: z.array(PriceRowSchema).max(10_000),
});

/** When the built-in table was compiled. */
export const PRICES_AS_OF = '2026-12-01';

/**
 * The built-in table, USD per million tokens, compiled on PRICES_AS_OF from the providers'
 * published price lists (Anthropic's pricing page; OpenAI's and Google's as quoted by public price
 * trackers). Anthropic's cache writes are its 5-minute writes (1.25 × input); OpenAI and Gemini
 * cache automatically at no write premium. Override or extend it with COMPACTOR_PRICES_FILE.
 */
const BUILT_IN: readonly Omit<PriceRow, 'currency'>[] = [
  // OpenAI
  { prefix: 'gpt-5', input: 1.25, cached_input: 0.125, output: 10 },
  { prefix: 'gpt-5-mini', input: 0.25, cached_input: 0.025, output: 2 },
  { prefix: 'gpt-5-nano', input: 0.05, cached_input: 0.005, output: 0.4 },
  { prefix: 'gpt-5.2', input: 1.75, cached_input: 0.175, output: 14 },
  { prefix: 'gpt-5.4', input: 2.5, cached_input: 0.25, output: 15 },
  { prefix: 'gpt-5.4-mini', input: 0.75, cached_input: 0.075, output: 4.5 },
  { prefix: 'gpt-5.4-nano', input: 0.2, cached_input: 0.02, output: 1.25 },
  { prefix: 'gpt-5.5', input: 5, cached_input: 0.5, output: 30 },
  { prefix: 'gpt-4.1', input: 2, cached_input: 0.5, output: 8 },
  { prefix: 'gpt-4.1-mini', input: 0.4, cached_input: 0.1, output: 1.6 },
  { prefix: 'gpt-4.1-nano', input: 0.1, cached_input: 0.025, output: 0.4 },
  { prefix: 'gpt-4o', input: 2.5, cached_input: 1.25, output: 10 },
  { prefix: 'gpt-4o-mini', input: 0.15, cached_input: 0.075, output: 0.6 },
  { prefix: 'o3', input: 2, cached_input: 0.5, output: 8 },
  { prefix: 'o4-mini', input: 1.1, cached_input: 0.275, output: 4.4 },
  // Anthropic
  // Opus 4.5 and later; Opus 4 and 4.1 (`claude-opus-4-2…` is claude-opus-4-20250514).
  { prefix: 'claude-opus-4-5', input: 5, cached_input: 0.5, cache_write: 6.25, output: 25 },
  { prefix: 'claude-opus-4-6', input: 5, cached_input: 0.5, cache_write: 6.25, output: 25 },
  { prefix: 'claude-opus-5', input: 5, cached_input: 0.5, cache_write: 6.25, output: 25 },
  { prefix: 'claude-opus-4-1', input: 15, cached_input: 1.5, cache_write: 18.75, output: 75 },
  { prefix: 'claude-opus-4-0', input: 15, cached_input: 1.5, cache_write: 18.75, output: 75 },
  { prefix: 'claude-opus-4-2', input: 15, cached_input: 1.5, cache_write: 18.75, output: 75 },
  { prefix: 'claude-sonnet-4', input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 },
  { prefix: 'claude-3-7-sonnet', input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 },
  { prefix: 'claude-haiku-4-5', input: 1, cached_input: 0.1, cache_write: 1.25, output: 5 },
  { prefix: 'claude-3-5-haiku', input: 0.8, cached_input: 0.08, cache_write: 1, output: 4 },
  // Google
  { prefix: 'gemini-2.5-pro', input: 1.25, cached_input: 0.125, output: 10 },
  { prefix: 'gemini-2.5-flash', input: 0.3, cached_input: 0.03, output: 2.5 },
  { prefix: 'gemini-2.5-flash-lite', input: 0.1, cached_input: 0.01, output: 0.4 },
];

/**
 * Relative prices (input = 1) by format, for a model no table knows: each provider's usual
 * ratios (Anthropic: reads 0.1×, 5-minute writes 1.25×, output 5×; OpenAI: reads 0.1×, no write
 * premium, output 8×; Gemini: implicit cache reads 0.25×, output 8×).
 */
const DEFAULTS: Record<string, Omit<Prices, 'source' | 'unit'>> = {
  anthropic: { input: 1, cached: 0.1, write: 1.25, output: 5 },
  'openai-chat': { input: 1, cached: 0.1, write: 1, output: 8 },
  'openai-responses': { input: 1, cached: 0.1, write: 1, output: 8 },
  gemini: { input: 1, cached: 0.25, write: 1, output: 8 },
};

/** Model-name prefixes to prices; the built-in rows plus a price file's (which win on the same prefix). */
export class PriceTable {
  private readonly rows: PriceRow[];

  constructor(extra: readonly PriceRow[] = []) {
    const byPrefix = new Map<string, PriceRow>();
    for (const row of BUILT_IN) byPrefix.set(row.prefix, { ...row, currency: 'USD' });
    for (const row of extra) byPrefix.set(row.prefix.toLowerCase(), { ...row, prefix: row.prefix.toLowerCase() });
    this.rows = [...byPrefix.values()];
  }

  /** The row for a model name (a provider prefix such as `anthropic/` is ignored), longest prefix first. */
  lookup(model: string | undefined): PriceRow | undefined {
    const name = (model ?? '').toLowerCase().replace(/^.*\//, '');
    if (!name) return undefined;
    let best: PriceRow | undefined;
    for (const row of this.rows) {
      if (name.startsWith(row.prefix) && (!best || row.prefix.length > best.prefix.length)) best = row;
    }
    return best;
  }

  /**
   * The prices a request's agent pays: the request's own, else the table's row for its model,
   * else the format's defaults in relative units. A write price not given is the input price,
   * or 1.25 × it in the Anthropic format.
   */
  resolve(pricing: Pricing | undefined, model: string | undefined, format: string): Prices {
    const premium = format === 'anthropic' ? 1.25 : 1;
    if (pricing) {
      return {
        input: pricing.input,
        cached: pricing.cached_input,
        write: pricing.cache_write ?? pricing.input * premium,
        output: pricing.output,
        unit: pricing.currency ?? 'relative',
        source: 'request',
      };
    }
    const row = this.lookup(model);
    if (row) return fromRow(row, premium, 'table');
    const d = DEFAULTS[format] ?? (DEFAULTS['openai-chat'] as (typeof DEFAULTS)[string]);
    return { ...d, unit: 'relative', source: 'default' };
  }
}

export function fromRow(row: PriceRow, premium: number, source: Prices['source']): Prices {
  return {
    input: row.input,
    cached: row.cached_input,
    write: row.cache_write ?? row.input * premium,
    output: row.output,
    unit: row.currency,
    source,
  };
}

/** The price table and the summarizer's prices an installation runs with (COMPACTOR_PRICES_FILE, COMPACTOR_SUMMARIZER_PRICING). */
export function installedPrices(
  rows: readonly PriceRow[] | undefined,
  summarizer: Pricing | undefined,
): { prices: PriceTable; summarizerPrices?: Prices } {
  const prices = new PriceTable(rows ?? []);
  if (!summarizer) return { prices };
  return {
    prices,
    summarizerPrices: {
      input: summarizer.input,
      cached: summarizer.cached_input,
      write: summarizer.input,
      output: summarizer.output,
      unit: summarizer.currency ?? 'relative',
      source: 'configured',
    },
  };
}
