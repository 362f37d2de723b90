import { z } from 'zod';
import { ConversationIdField } from '../../contract/conversation-id.js';
import {
  ArtifactRefSchema,
  CostSchema,
  Dropped as DroppedSchema,
  PreparedSchema,
  StageSchema,
  SummaryPlanSchema,
  SummaryReportSchema,
} from '../../contract/parts.js';
import { COST_FIELDS } from '../../cost/fields.js';
import { fieldError } from '../../errors.js';
import type { ModelProfile } from '../../tokens/models.js';
import { CompactOptions } from '../compact.js';
import { WindowOptions } from '../sliding-window.js';
import { SummarizeOptions } from '../summarize/options.js';

/** The cost fields are fit's own, not its stages'. */
const NOT_NESTED = { pricing: true, cache: true, horizon: true } as const;

export const FitOptions = z.strictObject({
  target_tokens: z.number().int().min(0).optional().describe('the occupancy to get under (this or target_fraction is required)'),
  target_fraction: z.number().gt(0).max(1).optional().describe("the target as a fraction of the model's context window"),
  min_saving_fraction: z
    .number()
    .min(0)
    .max(0.5)
    .default(0.02)
    .describe('a stage that would free less than this fraction of occupancy is skipped (no cache rewrite that does not pay)'),
  policy: z
    .enum(['cost', 'tokens'])
    .default('cost')
    .describe(
      'cost: reduce where that lowers the agent\'s bill with its prompt cache in view, always above `limit` (docs/fit.md, "What fit does"); tokens: reduce whenever over the target',
    ),
  limit: z
    .strictObject({
      tokens: z.number().int().min(0).optional().describe('the limit in tokens'),
      fraction: z.number().gt(0).max(1).optional().describe("the limit as a fraction of the model's context window"),
    })
    .optional()
    .describe(
      'policy cost: the occupancy a call must never exceed: above it a reduction is forced, down to the target. Default: the context window minus a reserve for the reply (10% of it, at most 16,384 tokens); the target when the window is unknown',
    ),
  summarizer_wait: z
    .enum(['allowed', 'never'])
    .optional()
    .describe(
      "never: no call waits on an LLM summarizer. A reduction that needs a summary takes the LLM's only when it is ready (prepared, or in the summary cache), else the extractive summary of that range stands in (no model call; warning `summary_extractive_standin`) and the next summary folds it; a prepared summary still being made is not waited for (`prepare.wait_ms` ignored). The proxy's default. Omitted or allowed: a forced reduction may call the summarizer and wait for it",
    ),
  ...COST_FIELDS,
  conversation_id: ConversationIdField.optional(),
  compact: z
    .strictObject(CompactOptions.omit(NOT_NESTED).partial().shape)
    .optional()
    .describe('options of the compaction stage (its target is the fit target; under policy cost it clears all it may)'),
  summarize: z
    .strictObject(SummarizeOptions.omit(NOT_NESTED).partial().shape)
    .optional()
    .describe('options of the summarization stage'),
  window: z
    .strictObject(WindowOptions.partial().shape)
    .optional()
    .describe('options of the sliding-window stage (default: a token budget that meets the target)'),
  prepare: z
    .strictObject({
      enabled: z.boolean().optional().describe('default: COMPACTOR_PREPARE (on when an LLM summarizer is configured)'),
      at: z
        .strictObject({
          fraction: z.number().gt(0).max(1).optional().describe('of the point where a summary is due'),
          tokens: z.number().int().min(0).optional().describe('an occupancy in tokens'),
        })
        .optional()
        .describe(
          "the occupancy at which the summary a later call will need starts being made in the background; default: once the headroom left under the point where a summary is due is less than three of the agent's calls at the history's recent growth per call (two for the summarizer to answer, one of margin) (policy cost: where it pays; policy tokens: the target). A summary that pays with none prepared is asked for then, and the call defers below `limit`",
        ),
      wait_ms: z
        .number()
        .int()
        .min(0)
        .max(60_000)
        .optional()
        .describe(
          'how long a call that needs a summary still being prepared may wait for it; default 0 below `limit`, 5000 above it',
        ),
    })
    .optional()
    .describe(
      'prepared summaries (rolling mode): made off the request path once occupancy nears the point where one is needed, spliced in by the call that needs it when its history still holds the range byte-identical at the same place',
    ),
});

export type FitOptions = z.output<typeof FitOptions>;

/**
 * The fit options a proxied request takes (`COMPACTOR_PROXY_OPTIONS`, `x-compactor-options`):
 * fit's own, each optional, and `context_window` over the model table's.
 */
export const ProxyOptions = FitOptions.partial().extend({
  context_window: z.number().int().positive().optional(),
  instant_compaction: z
    .union([z.boolean(), z.literal('extractive')])
    .optional()
    .describe(
      "an agent's own compaction request answered from the conversation's prepared summary: true (default; an LLM-written summary only), false (forwarded byte-identical), or extractive (an extractive summary answers too)",
    ),
  instant_compaction_share: z
    .number()
    .gt(0)
    .max(1)
    .optional()
    .describe(
      "proxy: the share of the context window past which a conversation's summary is kept prepared, measured on what goes upstream (what the agent's usage reports), while the proxy has not reduced it; default 0.5",
    ),
});

/** The proxy options that are not fit's: taken out before the fit request is built. */
export const PROXY_ONLY_OPTIONS = ['instant_compaction', 'instant_compaction_share'] as const;

/** Fit's own response fields. */
export const FIT_RESPONSE = {
  stages: z.array(StageSchema).describe('each stage, in order: whether it ran and what it left'),
  target: z.number().int().describe('the occupancy aimed at'),
  artifacts: z.array(ArtifactRefSchema).describe('the originals the compact and summarize stages offloaded'),
  summary: SummaryReportSchema.nullable().describe('the summary the summarize stage wrote; null when it did not run or failed'),
  dropped: DroppedSchema.nullable().describe('what the window stage dropped; null when it did not run'),
  call_again_at: z.number().int().describe('the occupancy at which calling again is worth it (guards against thrashing)'),
  cost: CostSchema.describe('what the reduction costs and saves, and why it was made, forced or deferred'),
  prepared: PreparedSchema.optional().describe(
    'a summary being prepared in the background for a later call, or the prepared one this response spliced in',
  ),
  plan: SummaryPlanSchema.optional().describe(
    "dry run: the summarizer calls the summarize stage would make; `actions` record what it would summarize, `tokens.after` estimates the summary at its max_tokens budget, and the window stage, which depends on the summary's real size, is not predicted",
  ),
};

export type Stage = z.output<typeof StageSchema>;

/** Fit's own response fields, as its `extra` gives them. */
export type FitExtra = z.output<z.ZodObject<typeof FIT_RESPONSE>>;

/** The reply reserve under the default limit: 10% of the window, at most this. */
export const REPLY_RESERVE_MAX = 16_384;

/**
 * The occupancy a call must never exceed (policy cost): `limit`, else the window minus a reserve
 * for the reply, else (window unknown) the target. Throws when it is under the target.
 */
export function limitOf(o: FitOptions, profile: Pick<ModelProfile, 'contextWindow'>, target: number): number {
  const window = profile.contextWindow;
  let limit: number;
  if (o.limit?.tokens !== undefined) limit = o.limit.tokens;
  else if (o.limit?.fraction !== undefined) {
    if (window === undefined) {
      throw fieldError(
        'CMP_ERR_OPTIONS_INVALID',
        'limit.fraction',
        'the context window of this model is unknown; set context_window or limit.tokens',
      );
    }
    limit = Math.floor(o.limit.fraction * window);
  } else if (window !== undefined) limit = Math.max(target, window - Math.min(REPLY_RESERVE_MAX, Math.ceil(window * 0.1)));
  else limit = target;
  if (limit < target) throw fieldError('CMP_ERR_OPTIONS_INVALID', 'limit', `is ${limit}, under the target ${target}`);
  return limit;
}

/** The target in tokens; throws when none is given or a fraction has no known window to apply to. */
export function targetOf(o: FitOptions, profile: Pick<ModelProfile, 'contextWindow'>): number {
  const window = profile.contextWindow;
  if (o.target_tokens === undefined && o.target_fraction === undefined) {
    throw fieldError('CMP_ERR_REQUEST_VALIDATION', 'target_tokens', 'give target_tokens or target_fraction');
  }
  if (o.target_tokens === undefined && window === undefined) {
    throw fieldError(
      'CMP_ERR_OPTIONS_INVALID',
      'target_fraction',
      'the context window of this model is unknown; set context_window or target_tokens',
    );
  }
  return o.target_tokens ?? Math.floor((o.target_fraction ?? 1) * (window ?? 0));
}

/** The summarize stage's options: fit's `summarize`, a failure kept (or answered as the error). */
export function summarizeOptions(o: FitOptions): SummarizeOptions {
  const onFailure = o.summarize?.on_failure === 'error' ? 'error' : 'keep';
  return SummarizeOptions.parse({ ...o.summarize, on_failure: onFailure });
}

/**
 * Compaction under policy cost clears everything it may at once (the batch rule: once the cache
 * is broken at the first cleared result, clearing more after it costs nothing more), so neither
 * a target nor `clear_at_least` stops it: fit decides whether it pays. Under policy tokens it
 * stops at the target.
 */
export function fitCompactOptions(o: FitOptions, target: number): CompactOptions {
  if (o.policy === 'tokens') return CompactOptions.parse({ ...o.compact, target_tokens: target });
  return CompactOptions.parse({ ...o.compact, target_tokens: undefined, clear_at_least: undefined });
}
