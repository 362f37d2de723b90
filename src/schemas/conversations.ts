import { z } from 'zod';

export { CONVERSATION_ID } from '../contract/conversation-id.js';

/** What happened to one model call. */
export const OUTCOMES = ['reduced', 'kept', 'unchanged', 'bypass', 'compaction-answered'] as const;

const Cost = z
  .object({
    unit: z.string().describe('the currency of the prices (USD, …), or `relative` when only their ratios are known'),
    usd: z.number().describe("this call's bill (input, cache reads and writes, output; the summarizer's when it ran)"),
    straight_usd: z
      .number()
      .describe('the same call sent as the client had it: every removed token read from the cache, nothing rewritten'),
    source: z
      .enum(['usage', 'estimate'])
      .describe("usage: priced from the provider's reported usage; estimate: fit's input bill for the coming call"),
  })
  .meta({ id: 'ConversationCost' });

export const ConversationCall = z
  .object({
    id: z.string().describe('the call, within its conversation'),
    at: z.string().describe('when it was recorded, ISO 8601'),
    via: z.enum(['proxy', 'fit']).describe('proxy: a proxied model call; fit: a `/v1/fit` call naming the conversation'),
    provider: z.string().describe('anthropic, openai, gemini, or the format a fit call was read as'),
    model: z.string().nullable().describe('the model the call named'),
    outcome: z
      .enum(OUTCOMES)
      .describe(
        'reduced: the history was reduced on this call; kept: an earlier reduction was reused; unchanged: sent as the client had it; bypass: passed through without reading (see `reason`); compaction-answered: the client asked for a compaction and Compactor answered it',
      ),
    reason: z.string().nullable().describe('why (a bypass reason, or why nothing was reduced); null when reduced'),
    tokens: z
      .object({
        client: z
          .number()
          .int()
          .describe(
            'tokens of the history the client sent, as fit counted it (proxy: what went on plus what the reductions in effect left out; 0 for a bypass, not counted)',
          ),
        forwarded: z.number().int().describe('tokens of the history sent on (or returned by fit), as fit counted it'),
        saved: z
          .number()
          .int()
          .describe(
            'client − forwarded: what this call did not send (a call that extends a reduction leaves out what it removed)',
          ),
        window: z.number().int().nullable().describe("the model's context window, when known"),
      })
      .describe('the history in tokens, as the client sent it and as it went on'),
    prefix: z
      .object({
        kept: z.boolean().describe("whether the upstream history began with the previous call's, unchanged"),
        broken_at: z
          .number()
          .int()
          .nullable()
          .describe(
            'when broken, the first message already sent that changed: in the request (fit), or in the history as it went upstream (proxy); the provider rewrites its cache from there',
          ),
      })
      .describe("the provider's cached prefix"),
    cache: z
      .object({
        read: z.number().int().nullable().describe('tokens the provider reported read from its prompt cache; null: not reported'),
        write: z
          .number()
          .int()
          .nullable()
          .describe('tokens the provider reported written to its prompt cache; null: not reported'),
      })
      .describe("the prompt cache as the provider's usage reported it"),
    cost: Cost.nullable().describe('null until priced (a proxied call whose usage was not read)'),
    ms_before_forwarding: z.number().describe('time spent before the call was forwarded (or fit answered), ms'),
    artifacts: z
      .array(
        z.object({
          id: z.string().describe('art_…, for `GET /v1/artifacts/{id}`'),
          kind: z.string().describe('tool_result, tool_input, … (as in ArtifactRef)'),
          tool_name: z.string().nullable().describe('the tool whose call or result it was; null for other content'),
          message_index: z
            .number()
            .int()
            .describe(
              'the message it came from: in the request (fit), or in the history as it went upstream (proxy: the client’s own until the first reduction)',
            ),
          tokens: z.number().int().nullable().describe('tokens of the original (what it covers); null in older records'),
        }),
      )
      .describe('originals offloaded on this call'),
    summaries: z
      .array(
        z.object({
          id: z.string().describe('art_… of the summarized range, for `GET /v1/artifacts/{id}`'),
          text_id: z.string().nullable().describe('art_… holding the summary text, for `GET /v1/artifacts/{id}`'),
          message_index: z.number().int().describe('where the summary sits in what was sent'),
          covered_messages: z.number().int().describe('messages it stands for, through every earlier summary'),
          summarizer: z
            .enum(['llm', 'extractive'])
            .nullable()
            .describe('llm: the configured model wrote it; extractive: picked from the messages; null in older records'),
        }),
      )
      .describe('summaries written on this call (a compaction answered: the summary it answered with)'),
  })
  .meta({
    id: 'ConversationCall',
    description: 'One model call of a conversation, as Compactor saw it: counts, ids and bills, no content.',
  });

const Totals = z
  .object({
    calls: z.number().int().describe('calls recorded (the newest 200 at most)'),
    tokens_saved: z.number().int().describe('sum of client − forwarded over the calls: the history tokens not sent'),
    prefix_breaks: z.number().int().describe('calls whose upstream history did not begin with the previous one'),
    outcomes: z.record(z.string(), z.number().int()).describe('calls by outcome'),
    bypasses: z.record(z.string(), z.number().int()).describe('bypassed calls by reason'),
    cost: z
      .object({
        unit: z.string().describe('the currency of the prices, or `relative`'),
        usd: z.number().describe('the priced calls, as sent'),
        straight_usd: z.number().describe('the same calls, straight'),
        avoided: z
          .number()
          .min(0)
          .describe(
            'straight_usd − usd, never below 0: calls that cost more than straight so far (a reduction pays its cache rewrite and summary on its own call and saves on the calls after it; a fit call is priced as its coming call only) avoided nothing, and usd > straight_usd says by how much',
          ),
      })
      .nullable()
      .describe('over the priced calls in the unit of the newest one; null when none is priced'),
  })
  .meta({ id: 'ConversationTotals' });

export const ConversationSummary = z
  .object({
    id: z.string().describe('the conversation, for `GET /v1/conversations/{id}`'),
    started_at: z.string().describe('the oldest call kept, ISO 8601'),
    last_at: z.string().describe('the newest call, ISO 8601'),
    provider: z.string().describe("the newest call's provider"),
    model: z.string().nullable().describe("the newest call's model"),
    totals: Totals.describe('what its calls add up to'),
  })
  .meta({ id: 'ConversationSummary' });

export const ConversationListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('conversations per page'),
  cursor: z
    .string()
    .regex(/^\d{1,6}$/)
    .optional()
    .describe('`next_cursor` of the previous page'),
});

export const ConversationList = z
  .object({
    conversations: z.array(ConversationSummary).describe('newest first'),
    next_cursor: z.string().nullable().describe('for the next page; null on the last one'),
  })
  .meta({ id: 'ConversationList', description: "The caller's recorded conversations, newest first." });

export const ConversationParams = z.object({ id: z.string().max(128).describe('the conversation id') });

export const ConversationDetail = z
  .object({
    id: z.string().describe('the conversation'),
    provider: z.string().describe("the newest call's provider"),
    model: z.string().nullable().describe("the newest call's model"),
    totals: Totals.describe('what its calls add up to'),
    calls: z.array(ConversationCall).describe('oldest first; the newest ones only, past the per-conversation bound'),
    truncated: z.boolean().describe('older calls were left out (the bound on calls per conversation)'),
  })
  .meta({ id: 'ConversationDetail', description: 'One conversation: its calls and their totals.' });

export type ConversationCallView = z.output<typeof ConversationCall>;
export type ConversationTotals = z.output<typeof Totals>;
export type ConversationSummaryView = z.output<typeof ConversationSummary>;
export type ConversationDetailView = z.output<typeof ConversationDetail>;
export type CallOutcome = (typeof OUTCOMES)[number];
