import { tagOf } from '../../tokens/content-tag.js';
import type { Addresser } from '../address.js';
import type { OriginalKind } from '../artifact-kinds.js';
import type { UnitKind } from '../format.js';
import type { ActionKind } from '../types.js';
import { type Count, type PlanSource, renderEdit } from './apply.js';
import { partAddress } from './part-address.js';
import type { Edit, Entry, Memo, OriginalSpec, Plan, Removal, StorePolicy } from './types.js';

/** An original about to be offloaded: its id (null with `store: none`: nothing is kept) and what to record. */
export interface Pending {
  readonly id: string | null;
  readonly spec: OriginalSpec;
}

/** What an original is, as the response lists it. */
export interface OriginalMeta {
  kind: OriginalKind;
  tool: string | null;
  tokens: number;
}

/**
 * A plan being built edit by edit, measured as it goes: compaction keeps an edit only when it
 * makes its message smaller (a placeholder must pay for itself) and stops once under its target,
 * so each edit is rendered (through the adapter, here) and counted when it is proposed. The
 * strategy speaks in units, slots and texts; `plan()` hands over the result, with the renderings
 * made so that `apply` does not make them again.
 */
export class Draft {
  private readonly current: unknown[];
  private readonly tokens: number[];
  private readonly edits = new Map<number, Edit[]>();
  private readonly removed = new Map<number, Removal>();
  private readonly originals: OriginalSpec[] = [];
  /** Tokens freed so far. */
  freed = 0;

  constructor(
    private readonly h: PlanSource,
    private readonly count: Count,
    private readonly address: Addresser,
    private readonly store: StorePolicy,
  ) {
    this.current = [...h.messages];
    this.tokens = [...h.counts];
  }

  /** Whether anything has been edited or removed. */
  get touched(): boolean {
    return this.edits.size > 0 || this.removed.size > 0;
  }

  /** The tokens of message `index` as the draft has it now. */
  tokensOf(index: number): number {
    return this.tokens[index] as number;
  }

  /**
   * The original of a unit (`result` or `call` at `slot`) or of a whole message (`message`), named
   * for the caller: what a placeholder will point to.
   */
  original(index: number, kind: UnitKind | 'message', slot: number, meta: OriginalMeta): Pending {
    const message = this.h.messages[index];
    const unit = kind === 'message' ? message : this.h.format.unitAt(message, kind, slot);
    // A part of a message that came in (tagged by its bytes) is hashed once: a later call finds
    // its digest by the tag, and its JSON is made only if it is read (to be stored or shared).
    let json: string | undefined;
    const text = () => {
      json ??= JSON.stringify(unit);
      return json;
    };
    const tag = tagOf(message);
    const { id, sha256 } =
      tag === undefined ? this.address(text()) : partAddress(this.address, tag, this.h.format.name, kind, slot, text);
    const spec: OriginalSpec = {
      id,
      sha256,
      get json() {
        return text();
      },
      value: unit,
      kind: meta.kind,
      tool_name: meta.tool,
      tokens: meta.tokens,
      message_index: index,
      store: this.store,
    };
    return { id: this.store === 'none' ? null : id, spec };
  }

  /** Whether message `index` is still the one that came in (nothing edited in it yet). */
  untouched(index: number): boolean {
    return this.current[index] === this.h.messages[index];
  }

  /** The tag of message `index` as the draft has it now (`tagOf`: derived once it was edited). */
  tagAt(index: number): string | undefined {
    return tagOf(this.current[index]);
  }

  /**
   * Replaces a tool result's text, if that makes the message smaller. Returns whether it did.
   * `tag`: what the edited message is named (`tagKnown`), found by the caller for this very edit.
   */
  replaceResult(index: number, slot: number, text: string, action: ActionKind, original: Pending, tag?: string): boolean {
    const edit: Edit = { op: 'unit', unit: { kind: 'result', slot, text }, action, artifactId: original.id };
    return this.propose(index, edit, original, tag);
  }

  /** Replaces a tool call's arguments, if that makes the message smaller. Returns whether it did. */
  replaceArgs(index: number, slot: number, args: Record<string, unknown>, action: ActionKind, original: Pending): boolean {
    return this.propose(index, { op: 'unit', unit: { kind: 'call', slot, args }, action, artifactId: original.id }, original);
  }

  /**
   * Removes the message's thinking whole, if that makes it smaller: `whole` when the message is
   * nothing but reasoning (it can only go whole: `remove`), `none` when it has none to remove.
   */
  stripThinking(index: number): 'done' | 'none' | 'whole' {
    const stripped = this.h.format.withoutThinking(this.current[index]);
    if (stripped === undefined) return 'none';
    if (stripped === null) return 'whole';
    const freed = (this.tokens[index] as number) - this.count(stripped);
    const original = this.original(index, 'message', -1, { kind: 'thinking', tool: null, tokens: freed });
    this.commit(index, stripped, { op: 'strip-thinking', artifactId: original.id }, original);
    return 'done';
  }

  /** Removes message `index` whole (a reasoning item its response does not need), offloading it. */
  remove(index: number, original: Pending): void {
    this.freed += this.tokens[index] as number;
    this.tokens[index] = 0;
    this.removed.set(index, { action: 'drop', artifactId: original.id });
    if (original.id) this.originals.push(original.spec);
  }

  private propose(index: number, edit: Edit, original: Pending, tag?: string): boolean {
    const rendered = renderEdit(this.h.format, this.h.messages[index], this.current[index], edit, tag);
    return this.commit(index, rendered, edit, original);
  }

  private commit(index: number, message: unknown, edit: Edit, original: Pending): boolean {
    const before = this.tokens[index] as number;
    const after = this.count(message);
    if (after >= before) return false;
    this.current[index] = message;
    this.tokens[index] = after;
    this.freed += before - after;
    const list = this.edits.get(index) ?? [];
    list.push(edit);
    this.edits.set(index, list);
    if (original.id) this.originals.push(original.spec);
    return true;
  }

  /** The plan: every message in input order (the removed left out), originals by message. */
  plan(): Plan {
    const entries: Entry[] = [];
    const memo = new Map<number, Memo>();
    this.h.messages.forEach((_, index) => {
      if (this.removed.has(index)) return;
      const edits = this.edits.get(index) ?? [];
      entries.push({ index, edits });
      if (edits.length > 0)
        memo.set(index, { message: this.current[index], tokens: this.tokens[index] as number, edits: edits.length });
    });
    // Listed by the message they came from, in the order they were made within one (a stable sort).
    const artifacts = [...this.originals].sort((a, b) => a.message_index - b.message_index);
    return { entries, removed: this.removed, artifacts, memo };
  }
}
