import type { Item, Violation, Warning } from '../history/types.js';

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
  /** Token overheads the provider charges for framing: per message, and once per request. */
  readonly framing: { readonly perMessage: number; readonly perRequest: number };
  /** Flat token costs for media whose size cannot be read from the request. */
  readonly media: { readonly image: number; readonly document: number; readonly audio: number };
}
