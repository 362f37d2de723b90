import { z } from 'zod';
import { ReasonCode, WarningCode } from './codes.js';

/** The artifact trail's classes, in the order a summary writes them and keeps them under its budget. */
export const TRAIL_CLASSES = [
  'modified',
  'created',
  'deleted',
  'read',
  'urls',
  'errors',
  'constraints',
  'tests',
  'mentioned',
  'commands',
] as const;

/**
 * The pieces of the public contract that the core's own types are made from (`z.output` of each):
 * a message, token and usage reports, actions, warnings, artifacts, summaries, fit's stages. The
 * request and response schemas (`schemas/`) compose them; nothing here imports the rest of `src`.
 */

/** One message in the provider's own wire format; checked by the format adapter, not here. */
export const Message = z.unknown().meta({
  id: 'Message',
  type: 'object',
  description:
    'One message exactly as the agent would send it to its provider: an OpenAI Chat Completions message, an Anthropic Messages message, an OpenAI Responses input item, or a Gemini content. Unknown fields are kept.',
});

export const TokensReport = z
  .object({
    before: z.number().int().describe('occupancy before: reported usage plus counted tokens after it, or all counted'),
    after: z.number().int().describe('occupancy after: the same measure of the returned history'),
    saved: z.number().int().describe('before minus after'),
    counting: z
      .enum(['exact', 'estimated', 'usage+exact', 'usage+estimated'])
      .describe(
        "exact: the model's own tokenizer; estimated: a close one; usage+: the reported usage plus counted tokens after it",
      ),
    tokenizer: z.string().describe('the tokenizer that counted (o200k_base, cl100k_base, …)'),
  })
  .meta({ id: 'TokensReport', description: 'Occupancy of the history before and after, in tokens.' });

export const BilledUsage = z
  .object({
    input_tokens: z.number().int().describe('prompt tokens the summarizer was billed'),
    output_tokens: z.number().int().describe('completion tokens the summarizer was billed'),
    total_tokens: z.number().int().describe('input plus output'),
    cached_input_tokens: z.number().int().describe("input tokens the summarizer's provider served from its cache"),
    calls: z.number().int().describe('LLM calls made'),
    model: z.string().nullable().describe('the summarizer model; null when no LLM was called'),
    prepared: z
      .object({
        input_tokens: z.number().int().describe('prompt tokens of the calls that made it'),
        output_tokens: z.number().int().describe('completion tokens of those calls'),
        total_tokens: z.number().int().describe('input plus output'),
        cached_input_tokens: z.number().int().describe("input tokens the summarizer's provider served from its cache"),
        calls: z.number().int().describe('LLM calls that made it'),
        model: z.string().nullable().describe('the summarizer model'),
      })
      .optional()
      .describe(
        'fit: the part of this bill that made the prepared summary spliced in (made in the background, billed here, once); included in the totals above',
      ),
  })
  .meta({ id: 'BilledUsage', description: 'What this request was billed (all 0 when no LLM was called).' });

export const PreparedSchema = z
  .object({
    id: z.string().describe('the prepared summary, for `GET /v1/prepared/{id}`'),
    state: z
      .enum(['started', 'running', 'ready', 'failed', 'spliced'])
      .describe('started or running: being made; ready: made, not used yet; failed; spliced: used by this response'),
    covers: z
      .object({
        from: z.number().int().describe('the first message of the range, in the history it was prepared from'),
        to: z.number().int().describe('the first message after the range'),
      })
      .describe('the messages the prepared summary stands for'),
  })
  .meta({
    id: 'Prepared',
    description:
      'A summary prepared off the request path for a later call (`prepare`), or the one this response spliced in: head, prepared summary, everything after its range verbatim.',
  });

export const ActionSchema = z
  .object({
    index: z.number().int().describe('the message, by its index in the request'),
    action: z
      .enum(['keep', 'rewrite', 'clear', 'offload', 'truncate', 'summarize', 'drop'])
      .describe(
        'keep: unchanged; rewrite: changed in place; clear: content removed; offload: replaced by a placeholder, the original stored; truncate: head and tail kept; summarize: folded into a summary; drop: removed',
      ),
    tokens_freed: z.number().int().describe('tokens this message no longer takes'),
    artifact_id: z.string().optional().describe('the art_… artifact holding the original, when it was kept'),
  })
  .meta({ id: 'Action', description: 'What happened to one input message.' });

export const WarningSchema = z
  .object({
    code: WarningCode.describe('stable warning code (target_not_met, does_not_pay, summarizer_failed, …)'),
    message: z.string().describe('what happened, in words'),
  })
  .meta({ id: 'Warning', description: 'Something the caller should know; the request still succeeded.' });

export const Fallback = z
  .object({
    from: z.string().describe('the strategy that failed (summarize)'),
    to: z.string().describe('the strategy that stood in (window)'),
    reason: z.string().describe('why: the failure code'),
  })
  .meta({ id: 'Fallback', description: 'A cheaper strategy stood in for a failed one.' });

export const ArtifactRefSchema = z
  .object({
    id: z.string().describe('art_… content address of the original'),
    message_index: z.number().int().describe('the input message the original came from'),
    kind: z
      .string()
      .describe(
        'tool_result, tool_result_duplicate, tool_result_truncated, tool_input, thinking, summary_range, section_range or window_range',
      ),
    tool_name: z.string().nullable().describe('the tool whose call or result it was; null for other content'),
    tokens: z.number().int().describe('tokens of the original content'),
    sha256: z.string().describe('SHA-256 of the original JSON value, hex'),
    content: z.unknown().optional().describe('the original JSON value (only with store: inline)'),
  })
  .meta({ id: 'ArtifactRef', description: 'An original that was offloaded: where it came from and how to get it back.' });

export const Dropped = z
  .object({
    messages: z.number().int().describe('messages dropped'),
    runs: z.number().int().describe('runs with at least one message dropped'),
    tokens: z.number().int().describe('tokens the dropped messages took'),
    last_dropped_run_id: z.string().nullable().describe('run id of the newest dropped message (null without run_ids)'),
  })
  .meta({ id: 'Dropped', description: 'What the sliding window dropped.' });

export const SummaryReportSchema = z
  .object({
    id: z.string().describe('the art_… artifact holding the summarized range (its content address with store none)'),
    parent_id: z.string().nullable().describe('the earlier summary this one folded'),
    text: z.string().describe('the summary as it appears in the history'),
    role: z.string().describe('user, system, pair, or "<role> (joined)" when it joined a neighbour to keep roles alternating'),
    message_index: z.number().int().describe('where the summary sits in the returned messages'),
    covered_messages: z.number().int().describe('original messages it stands for, through every earlier summary'),
    last_summarized_run_id: z.string().nullable().describe('run id of the newest summarized message (null without run_ids)'),
    summarizer: z
      .enum(['llm', 'extractive'])
      .describe('llm: the configured model wrote it; extractive: no LLM configured, picked from the messages'),
    model: z.string().nullable().describe('the model that wrote it; null for extractive'),
    cached: z
      .boolean()
      .describe('nothing was billed for the summary: it came from the summary cache, or from an identical request in flight'),
    facts: z
      .object({
        found: z
          .number()
          .int()
          .describe("identifiers found in the summarized range: the artifact trail's items and the other exact identifiers"),
        kept: z.number().int().describe("of those, the ones the summarizer's prose holds"),
        appended: z
          .number()
          .int()
          .describe('the ones its prose does not hold that were appended: in the artifact trail, or under "Key references"'),
        left_out: z
          .number()
          .int()
          .describe(
            'the ones left out of the trail by `trail_tokens`, or past the 40 "Key references" (some may be in the prose)',
          ),
        classes: z
          .array(
            z.object({
              class: z
                .enum([...TRAIL_CLASSES, 'references'])
                .describe(
                  'a class of the artifact trail, or references: the other identifiers (ids, error names, numbers with units)',
                ),
              found: z.number().int().describe('items of the class found in the range (and the summary it folds)'),
              kept: z.number().int().describe("of those, the ones the summarizer's prose holds"),
              appended: z
                .number()
                .int()
                .describe('the ones its prose does not hold, appended (in the trail, or under "Key references")'),
              left_out: z.number().int().describe('the ones left out by the budget (`trail_tokens`, or the 40 "Key references")'),
            }),
          )
          .describe('the same by class, for the classes found'),
      })
      .describe('identifiers of the range and whether the summary kept them'),
  })
  .meta({ id: 'SummaryReport', description: 'The summary written (or reused) and what it stands for.' });

export const SummaryPlanSchema = z
  .object({
    calls: z
      .array(
        z.object({
          purpose: z
            .enum(['chunk', 'merge', 'summary'])
            .describe('chunk: part of a long range; merge: chunk summaries into one; summary: a whole range'),
          input_tokens: z.number().int().describe("the call's prompt size"),
        }),
      )
      .describe('the calls, in order'),
    model: z.string().nullable().describe('the model they would use; null: extractive, no LLM'),
  })
  .meta({
    id: 'SummaryPlan',
    description:
      "The summarizer calls a dry run would make (sections mode: those known in advance; merges past max_section_tokens and qa depend on the summaries written). The dry run's `actions` record what the real run would do to each message; `tokens.after` assumes each summary fills summarizer.max_tokens (`dry_run_estimate` warning).",
  });

export const StageSchema = z
  .object({
    strategy: z.enum(['compact', 'summarize', 'window']).describe('the stage'),
    applied: z.boolean().describe('whether it changed the history'),
    tokens_after: z.number().int().describe('occupancy after it'),
    reason: ReasonCode.optional().describe(
      'why the stage changed nothing: nothing_to_reduce, saving_too_small, summarizer_failed, …',
    ),
    usage: BilledUsage.describe("the stage's LLM bill"),
  })
  .meta({ id: 'Stage', description: "One of fit's stages: whether it ran and what it left." });

export const CostSchema = z
  .object({
    unit: z.string().describe('the currency of the prices (USD, …), or `relative` when only their ratios are known'),
    decision: z
      .enum(['reduce', 'defer', 'forced'])
      .describe('reduce: it pays; defer: it does not pay yet (nothing applied); forced: the history was over `limit`'),
    pricing: z.enum(['request', 'table', 'default']).describe("where the agent's prices came from"),
    cache: z
      .object({
        source: z
          .enum(['usage', 'assumed', 'disabled'])
          .describe(
            "usage: the previous call's usage; assumed: no usage, its prompt taken as cached; disabled: cache.enabled false",
          ),
        cached_tokens: z.number().int().describe('tokens of the prefix the provider holds for the coming call'),
        ttl_seconds: z.number().int().optional().describe('the cache lifetime the request gave'),
      })
      .describe("the provider's prompt cache as the decision saw it"),
    tokens_removed: z.number().int().describe('tokens the reduction removes from every call from the coming one on'),
    batch_tokens: z
      .number()
      .int()
      .describe(
        'the economic batch: below this saving, waiting until more can be cleared at once costs less per call than breaking the cache now',
      ),
    rewrite_tokens: z
      .number()
      .int()
      .describe(
        'tokens the coming call writes to the cache that as is it would have read from it (from the first edited message on)',
      ),
    rewrite_cost: z.number().describe('what the coming call pays more for them, net of the tokens it no longer reads'),
    summarizer_cost: z.number().describe("the summarizer's bill for the reduction (estimated for a reduction not made)"),
    saving_per_call: z.number().describe('what every call from the coming one on pays less: tokens removed × the cached price'),
    payback_calls: z.number().int().nullable().describe('calls until the reduction has paid for itself; null: never'),
    horizon_calls: z
      .number()
      .int()
      .describe('expected calls left, the coming one included (`horizon`, or estimated from the history)'),
    calls_so_far: z
      .number()
      .int()
      .describe(
        'model calls the run has made: the replies the history shows plus those an earlier summary stands for. With `horizon` estimated, a reduction must pay back within them (even odds)',
      ),
    next_call: z
      .object({
        as_is: z.number().describe('the bill with the history as it was'),
        reduced: z.number().describe('the bill with the reduced history'),
      })
      .describe("the coming call's input bill without and with the reduction"),
    limit: z.number().int().optional().describe('fit: the occupancy that forces a reduction'),
    break_even_tokens: z
      .number()
      .int()
      .optional()
      .describe('compact with `clear_at_least: "auto"`: the smallest saving that pays for the rewrite this compaction makes'),
  })
  .meta({
    id: 'Cost',
    description:
      'What a reduction costs and saves with the provider\'s prompt cache in view (docs/fit.md, "What fit does"); for a deferred fit, the best reduction found, not made.',
  });
