import { z } from 'zod';

/** The agent's model's prices, per million tokens, as a request gives them. */
export const PricingSchema = z
  .strictObject({
    input: z.number().min(0).max(1e6).describe('price of an uncached input token, per million'),
    cached_input: z.number().min(0).max(1e6).describe('price of an input token read from the prompt cache, per million'),
    cache_write: z
      .number()
      .min(0)
      .max(1e6)
      .optional()
      .describe(
        'price of an input token written to the cache, per million; default: `input` (OpenAI, Gemini) or 1.25 × `input` (Anthropic)',
      ),
    output: z.number().min(0).max(1e6).describe('price of an output token, per million'),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .optional()
      .describe('ISO 4217 code (USD, EUR, …); omitted: the prices are relative units'),
  })
  .meta({ id: 'Pricing' });

export const CacheSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe("whether the agent's provider caches its prompt prefix (they all do by default)"),
    ttl_seconds: z
      .number()
      .int()
      .min(1)
      .max(2_592_000)
      .optional()
      .describe('how long the provider keeps a prefix; reported back only: the decision assumes the next call comes within it'),
  })
  .meta({ id: 'CacheSettings' });

export const HorizonSchema = z
  .strictObject({
    calls: z.number().int().min(1).max(1_000_000).describe('expected model calls left in this run, the coming one included'),
  })
  .meta({ id: 'Horizon' });

/** The cost fields fit, compact and summarize accept (docs/api.md, "The objects named above"; docs/fit.md, "What fit does"). */
export const COST_FIELDS = {
  pricing: PricingSchema.optional().describe(
    "the agent's model's prices; omitted: the built-in table for the request's model, else the format's provider defaults in relative units",
  ),
  cache: CacheSchema.optional().describe("the prompt cache of the agent's provider; the cached prefix is read from `usage`"),
  horizon: HorizonSchema.optional().describe(
    'expected remaining calls; omitted: estimated from the t calls the run has made (what P(more than x left) = t / (t + x) expects, up to 200), see docs/fit.md',
  ),
};

export type Pricing = z.output<typeof PricingSchema>;
export type CacheSettings = z.output<typeof CacheSchema>;
export type Horizon = z.output<typeof HorizonSchema>;

/** What a request said about cost (all optional). */
export interface CostRequest {
  readonly pricing?: Pricing | undefined;
  readonly cache?: CacheSettings | undefined;
  readonly horizon?: Horizon | undefined;
}
