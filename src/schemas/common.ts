import { z } from 'zod';
import { ReasonCode } from '../contract/codes.js';
import { ActionSchema, BilledUsage, Fallback, Message, TokensReport, WarningSchema } from '../contract/parts.js';
import { FORMAT_NAMES } from '../formats/registry.js';
import { RECALL_TOOL_NAME } from '../history/recall-tool.js';

/** Token counts a provider reports: whole, non-negative, and sane. */
const count = z.number().int().min(0).max(1e12).nullable().optional();

/** Gemini's counts, named in its REST API's camelCase (and its SDKs' snake_case, the same meaning). */
const GEMINI_COUNTS = {
  promptTokenCount: 'Gemini: prompt tokens, cached ones included',
  candidatesTokenCount: "Gemini: the reply's tokens",
  totalTokenCount: 'Gemini: prompt, reply and thoughts',
  thoughtsTokenCount: "Gemini: the reply's thinking tokens",
  toolUsePromptTokenCount: 'Gemini: tokens of tool-use prompts',
  cachedContentTokenCount: 'Gemini: prompt tokens read from the cache',
};
const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Every top-level count field of the four providers' usage objects (other fields pass through). */
const USAGE_COUNTS: Record<string, string> = {
  prompt_tokens: 'OpenAI Chat: prompt tokens, cached ones included',
  completion_tokens: "OpenAI Chat: the reply's tokens",
  total_tokens: 'OpenAI Chat and Responses: prompt plus reply',
  input_tokens:
    'OpenAI Responses: input tokens, cached ones included; Anthropic: uncached input tokens after the last cache breakpoint',
  output_tokens: "OpenAI Responses, Anthropic: the reply's tokens",
  cache_creation_input_tokens: 'Anthropic: input tokens written to the cache',
  cache_read_input_tokens: 'Anthropic: input tokens read from the cache',
  ...GEMINI_COUNTS,
  ...Object.fromEntries(Object.entries(GEMINI_COUNTS).map(([name, text]) => [snake(name), `${text} (SDK spelling)`])),
};

export const ReportedUsage = z
  .looseObject({
    ...Object.fromEntries(Object.entries(USAGE_COUNTS).map(([name, text]) => [name, count.describe(text)])),
    messages_covered: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('how many leading messages (the model reply included) the reported total covers; default: all'),
  })
  .meta({
    id: 'ReportedUsage',
    description:
      "The provider's usage object from the agent's last call, as it came: OpenAI Chat (`prompt_tokens`, `completion_tokens`, `total_tokens`), OpenAI Responses (`input_tokens`, `output_tokens`, `total_tokens`), Anthropic (`input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`) or Gemini (`promptTokenCount`, `candidatesTokenCount`, `totalTokenCount`, …) field names.",
  });

export const Trigger = z
  .strictObject({
    tokens: z.number().int().min(0).optional().describe('act when occupancy >= this many tokens'),
    fraction: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe('act when occupancy >= this fraction of the context window (needs a known `model` or `context_window`)'),
    messages: z.number().int().min(0).optional().describe('act when the history has at least this many messages'),
  })
  .refine((t) => t.tokens !== undefined || t.fraction !== undefined || t.messages !== undefined, {
    message: 'give at least one of tokens, fraction or messages',
  })
  .meta({ id: 'Trigger', description: 'Act only if occupancy reaches any of these; omitted = always act.' });

/** The fields every POST that takes a history accepts (docs/api.md, "Common request fields"). */
export const HistoryFields = {
  messages: z.array(Message).min(1).describe('the history, exactly as the agent would send it to its provider'),
  format: z
    .enum(FORMAT_NAMES)
    .optional()
    .describe('wire format of `messages`; omitted = detected from distinctive shapes, plain text read as openai-chat'),
  system: z
    .union([z.string(), z.array(z.unknown()), z.record(z.string(), z.unknown())])
    .optional()
    .describe("top-level system instruction (Anthropic's `system`, Gemini's `systemInstruction`); counted, never changed"),
  tools: z.array(z.unknown()).optional().describe("the agent's tool definitions; counted, never changed"),
  model: z.string().min(1).max(256).optional().describe("the agent's model: selects tokenizer and context window"),
  context_window: z.number().int().positive().optional().describe("overrides the model table's context window"),
  usage: ReportedUsage.optional().describe(
    "the usage your provider reported for the agent's last call, as it came: occupancy is its total plus the tokens counted after it (omitted: everything is counted)",
  ),
  recall_tool: z
    .string()
    .regex(RECALL_TOOL_NAME)
    .optional()
    .describe(
      'the tool that gives an offloaded original back to the model (e.g. `mcp__compactor__recall`, `recall`): placeholders and summaries then say "call the `<name>` tool with art_…". Omitted: found in `tools` (`recall`, Claude Code\'s `mcp__<server>__recall`, Codex\'s `<server>__recall`, opencode\'s `<server>_recall`); none there: hints name the artifact plainly ("stored as art_…"), never a tool the model does not have',
    ),
  run_ids: z.array(z.string().max(1024)).optional().describe('parallel to `messages`: which agent run produced each message'),
  trigger: Trigger.optional().describe('act only at or above this occupancy or length; omitted: always act'),
  dry_run: z
    .boolean()
    .default(false)
    .describe(
      "compute and report everything, change nothing: the history comes back unchanged, no LLM is called and nothing is stored, while `actions` records what the real run would do to each message (a summary's size, unknown before it is written, is estimated and said so in warnings)",
    ),
};

export const HistoryRequest = z.strictObject(HistoryFields);
export type HistoryRequest = z.output<typeof HistoryRequest>;

/** Fields every strategy response carries (docs/api.md, "Common response fields"). */
export const StrategyResponseFields = {
  messages: z.array(Message).describe('the reduced history, same format as the request'),
  format: z.enum(FORMAT_NAMES).describe('the format the history was read as'),
  applied: z.boolean().describe('whether anything changed'),
  reason: ReasonCode.optional().describe('when not applied: below_trigger, nothing_to_reduce, dry_run, …'),
  tokens: TokensReport.describe('occupancy before and after, in tokens'),
  usage: BilledUsage.describe("what this request was billed by the summarizer's LLM (all 0 when none was called)"),
  actions: z.array(ActionSchema).describe('what was done to each message of the request, in order'),
  warnings: z.array(WarningSchema).describe('what the caller should know (empty when all went as asked)'),
  fallback: Fallback.optional().describe('present when a cheaper strategy stood in for a failed one'),
};

export const Problem = z
  .object({
    type: z.string().describe('urn:compactor:error:<code>'),
    title: z.string().describe("the code's short title"),
    status: z.number().int().describe('the HTTP status'),
    detail: z.string().describe('what was wrong with this request'),
    code: z.string().describe('stable CMP_ERR_… code, documented in docs/api.md, "Errors"'),
    request_id: z.string().describe('the id the logs know this request by'),
    errors: z
      .array(
        z.object({
          path: z.string().describe('where in the body (keep, messages[1], …)'),
          message: z.string().describe('what is wrong there'),
        }),
      )
      .optional()
      .describe('each field that failed validation'),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details (application/problem+json).' });
