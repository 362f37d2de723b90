import type { z } from 'zod';
import type { ActionSchema, WarningSchema } from '../contract/parts.js';

/**
 * The format-free history model. A format adapter turns each wire message into one `Item` that
 * records only what the strategies cut on (role, tool-call pairing, thinking) and keeps the
 * message's original JSON value untouched; content is read from that value lazily, when counting
 * or rendering needs it.
 */

/** Normalized role: `developer` reads as `system`, legacy `function` results as `tool`. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface Item {
  /** Position in the request's `messages`. */
  readonly index: number;
  readonly role: Role;
  /** A real user turn (not a carrier of tool results): starts a run when no `run_ids` are given. */
  readonly userTurn: boolean;
  /** Ids of client-side tool calls this message makes; their results must follow it. */
  readonly calls: readonly string[];
  /** Ids of the tool calls this message answers. */
  readonly results: readonly string[];
  /** Whether the message carries thinking/reasoning blocks (kept or removed whole, never edited). */
  readonly thinking: boolean;
  /**
   * Part of the same model response as the item before it (OpenAI Responses: a reasoning item,
   * an assistant message and function calls are separate items of one response). Joined items
   * are one unit: their calls are answered after the last of them, and they are kept or dropped
   * together.
   */
  readonly joinsPrevious?: boolean;
  /** Never rewritten or summarized (e.g. OpenAI's own encrypted `compaction` items). */
  readonly opaque?: boolean;
  /**
   * An instruction inside the history (Anthropic's mid-conversation `role: "system"` message, a
   * Chat or Responses system or developer message after the head): kept byte-identical at its
   * place like the head, never dropped, summarized, merged or moved. It belongs to the group
   * before it (Anthropic places it right after the turn it follows), and that group is kept whole
   * with it (`Group.pinned`).
   */
  readonly pinned?: boolean;
  /**
   * Carries a block, part or item type the service does not know: kept byte-identical, counted by
   * its JSON, and never split from its neighbours (no cut on either side of it), since what it
   * pairs with is unknown.
   */
  readonly sticky?: boolean;
  /** The message exactly as it came in. Never mutated. */
  readonly original: unknown;
}

export type GroupKind = 'head' | 'user' | 'assistant' | 'tool_exchange' | 'in_flight' | 'other';

/**
 * The unit every strategy cuts on (docs/strategies.md, "Groups"). `end` is exclusive. A tool exchange
 * is one assistant message with tool calls plus every message that carries their results.
 */
export interface Group {
  readonly kind: GroupKind;
  readonly start: number;
  readonly end: number;
  /** Holds a pinned instruction (`Item.pinned`): kept whole, never dropped or summarized. */
  readonly pinned?: boolean;
}

/** A structural-rule violation, as `/v1/validate` lists them. */
export interface Violation {
  readonly index: number;
  readonly rule: string;
  readonly message: string;
}

/** A warning in a response: something done differently from what was asked, and why. */
export type Warning = Readonly<z.output<typeof WarningSchema>>;

/** One entry per input message: the record of what was lost. */
export type Action = z.output<typeof ActionSchema>;

export type ActionKind = Action['action'];
