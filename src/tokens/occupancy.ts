import { fieldError } from '../errors.js';

/** A provider usage object as the agent received it, plus how many leading messages it covers. */
export type ReportedUsage = Record<string, unknown> & { messages_covered?: number };

const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/**
 * The total (prompt plus completion) of a provider usage object, read from whichever family of
 * field names it uses: OpenAI Chat (`prompt_tokens`, `completion_tokens`, `total_tokens`), OpenAI
 * Responses (`input_tokens`, `output_tokens`, `total_tokens`), Anthropic (`input_tokens`,
 * `cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`), Gemini
 * (`promptTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`, `toolUsePromptTokenCount`,
 * `totalTokenCount`, or their snake_case forms). Undefined when none is present.
 */
export function reportedTotal(usage: ReportedUsage): number | undefined {
  const total = num(usage.total_tokens) ?? num(usage.totalTokenCount) ?? num(usage.total_token_count);
  if (total !== undefined) return total;
  const prompt = num(usage.prompt_tokens);
  if (prompt !== undefined) return prompt + (num(usage.completion_tokens) ?? 0);
  const input = num(usage.input_tokens);
  if (input !== undefined) {
    return (
      input +
      (num(usage.cache_creation_input_tokens) ?? 0) +
      (num(usage.cache_read_input_tokens) ?? 0) +
      (num(usage.output_tokens) ?? 0)
    );
  }
  const gPrompt = num(usage.promptTokenCount) ?? num(usage.prompt_token_count);
  if (gPrompt !== undefined) {
    const parts = [
      usage.candidatesTokenCount ?? usage.candidates_token_count,
      usage.thoughtsTokenCount ?? usage.thoughts_token_count,
      usage.toolUsePromptTokenCount ?? usage.tool_use_prompt_token_count,
    ];
    return parts.reduce<number>((sum, v) => sum + (num(v) ?? 0), gPrompt);
  }
  return undefined;
}

/**
 * Checks that a usage object can apply to a history of `length` messages, and gives its total and
 * the messages it covers. Every endpoint that takes a history applies it, whether it uses the
 * usage or not. Throws 400 `CMP_ERR_OPTIONS_INVALID` when no total is found or
 * `messages_covered` is past the history's end.
 */
export function checkUsage(usage: ReportedUsage, length: number): { total: number; covered: number } {
  const total = reportedTotal(usage);
  if (total === undefined) {
    throw fieldError(
      'CMP_ERR_OPTIONS_INVALID',
      'usage',
      'no token total found (expected OpenAI, Anthropic, Responses or Gemini usage fields)',
    );
  }
  const covered = usage.messages_covered ?? length;
  if (covered > length) {
    throw fieldError('CMP_ERR_OPTIONS_INVALID', 'usage.messages_covered', `is ${covered}, but there are only ${length} messages`);
  }
  return { total, covered };
}

/**
 * Occupancy from reported usage: the reported total for the first `messages_covered` messages
 * (default: all of them) plus the counted tokens of every message after them. Throws as `checkUsage`.
 */
export function occupancyFromUsage(usage: ReportedUsage, counts: readonly number[]): number {
  const { total, covered } = checkUsage(usage, counts.length);
  let after = 0;
  for (let i = covered; i < counts.length; i++) after += counts[i] as number;
  return total + after;
}

/** The bounds of `usageScale`: a usage that disagrees with the count by more is taken at that. */
const SCALE_BOUNDS = [0.05, 20] as const;

/**
 * Occupancy tokens per counted token: exactly 1 when the occupancy is the count (no usage), else
 * the reported usage's ratio to Compactor's own count of the same request (a provider whose
 * tokenizer counts otherwise). What a strategy frees is counted by Compactor: taken off an
 * occupancy in the usage's units, it is converted at this rate (unconverted, a usage counting
 * fewer tokens made `tokens.after` negative: 734 -> -266).
 */
export function usageScale(occupancy: number, counted: number): number {
  if (counted <= 0 || occupancy === counted) return 1;
  const ratio = occupancy / counted;
  return Number.isFinite(ratio) ? Math.min(SCALE_BOUNDS[1], Math.max(SCALE_BOUNDS[0], ratio)) : 1;
}
