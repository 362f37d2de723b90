import { z } from 'zod';
import { COST_FIELDS } from '../cost/fields.js';
import { RuleSchema } from './compact-rules.js';

/** Compaction's options (`/v1/compact`'s own request fields, and fit's `compact` stage). */
export const CompactOptions = z.strictObject({
  keep_tool_uses: z.number().int().min(0).default(3).describe('the newest N tool results are never touched'),
  min_tokens: z.number().int().min(0).default(100).describe('results smaller than this are left alone'),
  exclude_tools: z.array(z.string().max(256)).max(1000).default([]).describe('tool names never compacted'),
  clear_tool_inputs: z.boolean().default(false).describe('also compact large arguments of old tool calls'),
  rules: z.array(RuleSchema).max(1000).default([]).describe('per-tool placeholders and keep_last'),
  dedupe: z.boolean().default(true).describe('an older result identical to a newer one becomes a pointer to it'),
  truncate_tokens: z
    .number()
    .int()
    .min(16)
    .optional()
    .describe('old results kept verbatim but larger than this are cut to head and tail, the original offloaded'),
  clear_thinking: z
    .strictObject({ keep_turns: z.number().int().min(0).describe('newest assistant turns that keep their thinking') })
    .optional()
    .describe(
      'remove thinking/reasoning from all but the newest N assistant turns. A turn is everything after a real user message (a tool-use loop is one turn); the turn in progress always keeps its thinking, as providers require, even with keep_turns 0. Whole blocks, parts or reasoning_content; OpenAI Responses reasoning items whole, and only those no item of their response names by id (the others are reported in warnings). Not restorable by expand',
    ),
  target_tokens: z.number().int().min(0).optional().describe('stop once occupancy is at or under this'),
  clear_at_least: z
    .union([z.number().int().min(0), z.literal('auto')])
    .optional()
    .describe(
      'do nothing unless at least this many tokens would be freed; "auto": unless the saving pays, over the expected remaining calls, for the cached tokens the compaction rewrites (the cost rule of fit, see docs/fit.md; `cost.break_even_tokens` says how much would)',
    ),
  store: z
    .enum(['server', 'inline', 'none'])
    .default('server')
    .describe('server: originals persisted with a TTL; inline: returned in `artifacts`; none: lossy clearing'),
  ...COST_FIELDS,
});

export type CompactOptions = z.output<typeof CompactOptions>;
