import type { z } from 'zod';
import type { ArtifactRefSchema } from '../../contract/parts.js';
import type { OriginalKind } from '../artifact-kinds.js';
import type { ActionKind } from '../types.js';

/** Where an original goes: persisted with a TTL, returned in the response, or nowhere. */
export type StorePolicy = 'server' | 'inline' | 'none';

/**
 * An original to offload as an artifact: what a replaced unit, a removed item or a summarized range
 * was, named by the caller's addresser. `json` is what is stored and hashed; `value` what an
 * inline response returns.
 */
export interface OriginalSpec {
  readonly id: string;
  readonly sha256: string;
  readonly json: string;
  readonly value: unknown;
  /** One of the originals' kinds in `history/artifact-kinds.ts`. */
  readonly kind: OriginalKind;
  readonly tool_name: string | null;
  /** Tokens of the original content. */
  readonly tokens: number;
  /** The input message it came from (the first of a range). */
  readonly message_index: number;
  readonly store: StorePolicy;
}

/**
 * `a` recorded at another message index; its JSON read through, not made (a spread would make it).
 * At its own index, `a` itself (specs are never changed once made).
 */
export function atIndex(a: OriginalSpec, message_index: number): OriginalSpec {
  if (message_index === a.message_index) return a;
  return {
    id: a.id,
    sha256: a.sha256,
    get json() {
      return a.json;
    },
    value: a.value,
    kind: a.kind,
    tool_name: a.tool_name,
    tokens: a.tokens,
    message_index,
    store: a.store,
  };
}

/** A tool result's new text, or a tool call's new arguments, at a slot of the message. */
export type UnitReplacement =
  | { readonly kind: 'result'; readonly slot: number; readonly text: string }
  | { readonly kind: 'call'; readonly slot: number; readonly args: Record<string, unknown> };

/**
 * One change to a kept message, in the history model's terms (the adapter renders it). Edits of
 * one message apply in order. `append-text` is the only one that adds: the others reduce.
 */
export type Edit =
  | { readonly op: 'unit'; readonly unit: UnitReplacement; readonly action: ActionKind; readonly artifactId: string | null }
  | { readonly op: 'strip-thinking'; readonly artifactId: string | null }
  /** A summary joining the message as one more text block or part. */
  | { readonly op: 'append-text'; readonly text: string }
  /** The message without the text block a summary added (a host given back when its summary moves). */
  | { readonly op: 'drop-last-text'; readonly collapse: boolean };

/** A message the plan writes anew: plain text in a role, or a synthetic tool exchange (two messages). */
export type Insert =
  | { readonly kind: 'text'; readonly role: 'user' | 'assistant' | 'system'; readonly text: string }
  | {
      readonly kind: 'exchange';
      readonly id: string;
      readonly text: string;
      readonly signed: boolean;
      readonly reasoning: string | undefined;
    };

/**
 * One slot of the output, in order: an input message (kept as it came, or edited), or messages
 * written anew. `key` names an entry whose output position a strategy reports (a summary's
 * `message_index`): the position of the last message it produces.
 */
export type Entry =
  | { readonly index: number; readonly edits: readonly Edit[]; readonly key?: string }
  | { readonly insert: readonly Insert[]; readonly key?: string };

/** An input message left out of the output, and the action recorded for it. */
export interface Removal {
  readonly action: 'summarize' | 'drop';
  /** The original offloaded when the message was removed on its own (a reasoning item). */
  readonly artifactId?: string | null;
}

/**
 * What a strategy returns instead of wire JSON: the output as a sequence of entries over the
 * input's indices, the input messages it leaves out, and the originals it offloads (in the order
 * the response lists them). `apply` renders it through the adapter; `evaluate` measures it first.
 */
export interface Plan {
  readonly entries: readonly Entry[];
  readonly removed: ReadonlyMap<number, Removal>;
  readonly artifacts: readonly OriginalSpec[];
  /**
   * Renderings already made while the plan was built (compaction measures each edit as it goes):
   * what an input message became after its first `edits` edits, and its tokens. `apply` starts
   * from there.
   */
  readonly memo?: ReadonlyMap<number, Memo>;
  /** Summaries the plan stands for but that were not written (a dry run): see `Unwritten`. */
  readonly unwritten?: Unwritten;
}

/**
 * Summaries a dry run's plan leaves empty: the summarizer calls writing them would take, and the
 * tokens they would add (estimated at their budget), on top of what the plan itself adds.
 */
export interface Unwritten {
  readonly calls: number;
  readonly tokens: number;
}

/** An input message as its first `edits` edits left it. */
export interface Memo {
  readonly message: unknown;
  readonly tokens: number;
  readonly edits: number;
}

/** Keeps every input message as it came. */
export function keepPlan(length: number): Plan {
  return {
    entries: Array.from({ length }, (_, index) => ({ index, edits: [] })),
    removed: new Map(),
    artifacts: [],
  };
}

/** Whether a plan changes anything. */
export function changes(plan: Plan): boolean {
  if (plan.removed.size > 0) return true;
  return plan.entries.some((e, position) => !('index' in e) || e.edits.length > 0 || e.index !== position);
}

/** An offloaded original as the response lists it (`artifacts`), with its content when inline. */
export type ArtifactRef = z.output<typeof ArtifactRefSchema>;

/** An original to persist (the store's `NewArtifact`). */
export interface Offload {
  readonly id: string;
  readonly kind: string;
  readonly tool_name: string | null;
  readonly content: string;
  readonly sha256: string;
}
