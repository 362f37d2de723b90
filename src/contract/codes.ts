import { z } from 'zod';

/**
 * Every warning a response can carry, made once: a stable snake_case code and what it means.
 * Codes are never reused or renamed; docs/api.md's troubleshooting table shows each one with this
 * same text (a test keeps them in sync), and the OpenAPI document lists them (`WarningCode`).
 */
export const WARNINGS = {
  unsafe_cut_avoided:
    "a cut was moved (always towards keeping more) because the asked one would split a tool call from its result or break the format's role order; in sections mode, messages no summary form fits between were left as they were",
  target_not_met:
    'the target could not be reached without breaking a rule: what is left is the head, the first user message, a summary and the newest group, which no strategy touches',
  thinking_kept:
    "`clear_thinking` kept thinking it was asked to remove: the turn in progress needs it (Anthropic requires a tool-use loop's first assistant message to keep its thinking block), or a later Responses item refers to a reasoning item",
  summary_not_smaller:
    'the summary (or even an empty one) would not be smaller than the messages it replaces, so none was committed',
  saving_below_clear_at_least:
    'compaction would free less than `clear_at_least` (or, with `"auto"`, less than the break-even batch): nothing was changed',
  stage_skipped: 'fit (`policy: "tokens"`): a stage would have freed less than `min_saving_fraction` of the occupancy',
  does_not_pay: 'fit deferred, or took a smaller candidate, because a larger reduction would not pay back',
  summarizer_failed:
    "the summarizer failed and `on_failure` let the request go on: the message is the failure's error code and what happened",
  dry_run_estimate:
    "a dry run's `tokens.after` assumes the summary takes its whole `summarizer.max_tokens` budget (the artifact trail's size is not estimated)",
  prepared_already_billed:
    'fit: the prepared summary spliced in was billed to another response that spliced it at the same moment; this one is not billed for it (`usage.prepared` is all 0)',
  cache_not_written:
    'the summary was written but could not be cached (the store did not answer); the next identical request pays for it again',
  prepared_unavailable:
    'fit went on without prepared summaries: their index or job queue (Redis) did not answer in time, so none was spliced in and none was asked for (or the one asked for was not queued); the next call tries again',
  summary_extractive_standin:
    'fit with `summarizer_wait: "never"` (the proxy\'s default): a summary was needed and no LLM summary of its range was ready (prepared, or in the summary cache), so the extractive summary (no model call) stands in, and the next summary folds it',
  instruction_kept:
    'a system or developer message inside the history is kept where it stands, with the turn it follows (like the head): the summary covers only the messages before it, and what follows it is kept as it came',
  unknown_part_type:
    'an OpenAI Chat content part or a Gemini part of a kind Compactor does not know was kept verbatim, counted as text, and never separated from its neighbours',
  unknown_block_type:
    'an Anthropic content block of a type Compactor does not know was kept verbatim, counted as text, and never separated from its neighbours',
  unknown_item_type:
    'an OpenAI Responses item of a type Compactor does not know was kept verbatim, counted as text, and never separated from its neighbours',
  window_unmarked:
    "fit's window dropped a range without a marker: no marker form fits between its neighbours in the history's format (in Anthropic and Gemini, the message before already ends with a joined summary); the range is gone from the history, as `/v1/window` drops",
  placeholder_not_verified:
    '`/v1/expand` left a signed placeholder as it is: its MAC does not verify in the slot it sits in (copied into another tool call, repeated, edited, or signed for another key or under another installation secret); each placeholder restores only into the call it was written for, once',
} as const satisfies Record<string, string>;

/**
 * Every `reason` a response (or one of fit's stages) gives for changing nothing, made once, as the
 * warnings are: docs/api.md's troubleshooting table shows each with this text and what to do.
 */
export const REASONS = {
  below_trigger:
    'a `trigger` was given and the occupancy is under it (fit with `policy: "tokens"`: the occupancy is under the target)',
  nothing_to_reduce:
    'nothing the options allow could be reduced: compaction found no old tool result outside the newest `keep_tool_uses` larger than `min_tokens`; the window already fits `keep`; summarize found no messages between the head and the kept tail',
  does_not_pay:
    'fit (`policy: "cost"`): a reduction would raise the agent\'s bill, because it re-bills the cached prompt from its first edit on and the saving would not repay that over the expected remaining calls; `cost` shows the best candidate, `call_again_at` when it will pay or be forced',
  saving_too_small:
    'fit with `policy: "tokens"`: a stage would free less than `min_saving_fraction` (2%) of the occupancy, so it was skipped (`stage_skipped`)',
  below_clear_at_least:
    'compaction would free less than `clear_at_least` tokens (with `"auto"`: less than pays for the cached tokens it rewrites), so nothing was changed (`saving_below_clear_at_least`)',
  summary_not_smaller:
    'the summary (or even an empty one) would not be smaller than the messages it replaces (the artifact trail counts)',
  summarizer_failed:
    'the summarizer LLM timed out, failed or answered nothing, and `on_failure` is `keep` (fit: the window stood in, see `fallback`)',
  dry_run: '`dry_run: true`: nothing was changed or stored; `actions` shows what a real run would do',
  summary_being_prepared:
    'fit (`policy: "cost"`): a summary would pay now, but the same range is being prepared in the background (`prepared`); rather than pay for it twice, this call changes nothing, and the call that finds it ready splices it in',
} as const satisfies Record<string, string>;

/** The codes of a catalogue, as the non-empty tuple `z.enum` takes. */
function codesOf<K extends string>(catalogue: Record<K, string>): [K, ...K[]] {
  return Object.keys(catalogue) as [K, ...K[]];
}

/** A catalogue as one description: every code with what it means. */
function described(intro: string, catalogue: Record<string, string>): string {
  return [intro, ...Object.entries(catalogue).map(([code, meaning]) => `- \`${code}\`: ${meaning}`)].join('\n');
}

export const WarningCode = z.enum(codesOf(WARNINGS)).meta({
  id: 'WarningCode',
  description: described('A stable warning code (docs/api.md, "Troubleshooting"):', WARNINGS),
});
export type WarningCode = z.output<typeof WarningCode>;

export const ReasonCode = z.enum(codesOf(REASONS)).meta({
  id: 'ReasonCode',
  description: described('Why nothing changed, a stable code (docs/api.md, "Troubleshooting"):', REASONS),
});
export type ReasonCode = z.output<typeof ReasonCode>;
