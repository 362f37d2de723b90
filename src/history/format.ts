import type { Item, Violation, Warning } from './types.js';

/** How well one message fits a format: distinctive of it, compatible with it, or impossible. */
export type Fit = 'yes' | 'maybe' | 'no';

/** What the token counter reads from a message: its text, and media billed at flat rates. */
export interface Countable {
  text: string;
  images: number;
  documents: number;
  audio: number;
}

export interface ParseResult {
  items: Item[];
  warnings: Warning[];
}

/** A client tool call inside a message; `slot` locates it for `unitAt` and `replaceUnit`. */
export interface CallSite {
  readonly id: string;
  readonly name: string;
  /** The parsed arguments, or undefined when they are not a JSON object (custom tools). */
  readonly args: Record<string, unknown> | undefined;
  readonly slot: number;
}

/** A tool result inside a message; `slot` locates it for `unitAt` and `replaceUnit`. */
export interface ResultSite {
  readonly callId: string;
  readonly slot: number;
  /** The result's text (images and files as short notes), what placeholders and dedupe read. */
  readonly text: string;
  /** Whether the result reports an error (Anthropic `is_error`), when the format says. */
  readonly error?: boolean;
}

export type UnitKind = 'call' | 'result';

/**
 * A wire format: detection, parsing into the history model, and its structural rules. Adapters
 * are the only code that knows a format's shapes; strategies see `Item`s and call back into the
 * adapter to build or inspect messages, never branching on the format's name.
 */
export interface FormatAdapter {
  readonly name: string;
  /** Shape-only check of one message, for detection. Never throws. */
  classify(message: unknown): Fit;
  /**
   * Parses the whole history (pairing can depend on neighbours). Throws a `CompactorError`
   * `CMP_ERR_HISTORY_MALFORMED` naming the field when a message is not of this format.
   */
  parse(messages: readonly unknown[]): ParseResult;
  /** Every structural rule of this format that the history breaks (empty when valid). */
  violations(items: readonly Item[]): Violation[];
  /** Whether `next` may directly follow `prev` in this format (`prev` undefined: first message). */
  canFollow(prev: Item | undefined, next: Item): boolean;
  /** The countable content of one message (already parsed by `parse`). */
  countable(message: unknown): Countable;
  /** Text of a top-level system instruction in this format (`system`), for counting. */
  systemText(system: unknown): string;
  /** The client tool calls a message makes, in order. */
  callSites(message: unknown): CallSite[];
  /** The tool results a message carries, in order. */
  resultSites(message: unknown): ResultSite[];
  /**
   * The JSON value at a slot: the unit compaction offloads and expand puts back (a whole tool
   * message in OpenAI Chat, a `tool_result` or `tool_use` block in Anthropic).
   */
  unitAt(message: unknown, kind: UnitKind, slot: number): unknown;
  /** A copy of the message with the unit at `slot` replaced; the original is never touched. */
  replaceUnit(message: unknown, kind: UnitKind, slot: number, unit: unknown): unknown;
  /** A result unit whose content is `text`, its other fields (ids, error flags) kept. */
  resultWithText(unit: unknown, text: string): unknown;
  /** A call unit with new arguments, its other fields kept. */
  callWithArgs(unit: unknown, args: Record<string, unknown>): unknown;
  /**
   * The message with its thinking/reasoning removed whole; `null` when the message is nothing but
   * reasoning and can only go whole (an OpenAI Responses reasoning item: see `reasoningTie`);
   * undefined when it has none or nothing valid would remain.
   */
  withoutThinking(message: unknown): unknown | null | undefined;
  /**
   * For an item `withoutThinking` answers with `null`: why it must stay (a later item of the same
   * response refers to it), or undefined when it may be removed. Formats whose thinking lives
   * inside messages do not have it.
   */
  reasoningTie?(items: readonly Item[], index: number): string | undefined;
  /** A plain text message of this format, in its natural form (summaries, notes). */
  textMessage(role: 'user' | 'assistant' | 'system', text: string): unknown;
  /**
   * A synthetic tool exchange holding a section summary (a call to `compactor_summary` and its
   * result), or undefined where the format would reject a call to an undeclared tool. `signed`
   * puts the provider's accepted placeholder signature on the call; `reasoning` keeps a
   * reasoning text before it.
   */
  summaryExchange(id: string, text: string, options: { signed: boolean; reasoning: string | undefined }): unknown[] | undefined;
  /** Whether this format accepts a `system` message inside the history. */
  readonly systemMessages: boolean;
  /** The message's own prose: text parts and refusals, without tool traffic or thinking. */
  prose(message: unknown): string;
  /** The message with `text` appended as one more text block or part (a summary joining it). */
  appendText(message: unknown, text: string): unknown;
  /** The text of the message's last text block or part, if its last block is text. */
  lastText(message: unknown): string | undefined;
  /**
   * The message without its last block (which `appendText` added); with `collapse`, a single
   * remaining text block becomes string content again, as it was before `appendText`.
   */
  dropLastText(message: unknown, collapse: boolean): unknown;
  /**
   * Whether the message's content is one plain string: a summary joining it turns it into blocks,
   * and taking the summary off again (`dropLastText` with `collapse`) gives the string back.
   */
  hasStringContent(message: unknown): boolean;
  /** Whether the message carries a provider's reasoning signature (Gemini's `thoughtSignature`). */
  hasSignature(message: unknown): boolean;
  /** The message's reasoning text where the format keeps it as text (`reasoning_content`), else undefined. */
  reasoningText(message: unknown): string | undefined;
  /** Token overheads the provider charges for framing: per message, and once per request. */
  readonly framing: { readonly perMessage: number; readonly perRequest: number };
  /** Flat token costs for media whose size cannot be read from the request. */
  readonly media: { readonly image: number; readonly document: number; readonly audio: number };
}
