import type { FormatAdapter, UnitKind } from '../history/format.js';
import type { Action, ActionKind } from '../history/types.js';
import type { NewArtifact } from '../store/types.js';
import type { ArtifactRef, CompactOptions } from './compact.js';
import type { PreparedHistory, StrategyContext } from './types.js';

const ACTION_RANK: Record<ActionKind, number> = {
  keep: 0,
  rewrite: 1,
  truncate: 2,
  clear: 3,
  offload: 3,
  summarize: 4,
  drop: 5,
};

/** An original about to be offloaded: its content address, computed before anything is recorded. */
export interface Pending {
  id: string | null;
  sha256: string;
  json: string;
  unit: unknown;
  kind: string;
  tool: string | null;
  tokens: number;
}

/** The working state of one compaction: the rewritten messages and what was recorded. */
export class Rewrite {
  readonly messages: unknown[];
  readonly counts: number[];
  readonly actions: Action[];
  readonly artifacts: ArtifactRef[] = [];
  readonly offload: NewArtifact[] = [];
  private readonly seen = new Set<string>();
  private readonly dropped = new Set<number>();
  freed = 0;

  constructor(
    private readonly h: PreparedHistory,
    private readonly ctx: StrategyContext,
    private readonly store: CompactOptions['store'],
  ) {
    this.messages = [...h.messages];
    this.counts = [...h.counts];
    this.actions = h.messages.map((_, index) => ({ index, action: 'keep' as ActionKind, tokens_freed: 0 }));
  }

  get format(): FormatAdapter {
    return this.h.format;
  }

  /** The content address of an original unit (no id with `store: none`: nothing is kept). */
  pending(unit: unknown, kind: string, tool: string | null, tokens: number): Pending {
    const json = JSON.stringify(unit);
    const { id, sha256 } = this.ctx.address(json);
    return { id: this.store === 'none' ? null : id, sha256, json, unit, kind, tool, tokens };
  }

  /**
   * Puts a rewritten message in place if it is smaller than the current one (a placeholder must
   * pay for itself), recording its action and the offloaded original. Returns whether it did.
   */
  commit(index: number, message: unknown, action: ActionKind, original?: Pending): boolean {
    const before = this.counts[index] as number;
    const after = this.ctx.counter.countMessage(this.format, this.ctx.profile, message);
    if (after >= before) return false;
    this.messages[index] = message;
    this.counts[index] = after;
    this.freed += before - after;
    const entry = this.actions[index] as Action;
    entry.tokens_freed += before - after;
    if (ACTION_RANK[action] >= ACTION_RANK[entry.action]) entry.action = action;
    if (original?.id) {
      this.record(index, original);
      entry.artifact_id ??= original.id;
    }
    return true;
  }

  /**
   * Removes message `index` whole (an OpenAI Responses reasoning item whose response does not
   * need it), recording a `drop` and the offloaded original. Its slot stays until `output()`, so
   * every other index keeps meaning the input's message.
   */
  drop(index: number, original: Pending): void {
    const before = this.counts[index] as number;
    this.dropped.add(index);
    this.counts[index] = 0;
    this.freed += before;
    const entry = this.actions[index] as Action;
    Object.assign(entry, { action: 'drop', tokens_freed: entry.tokens_freed + before });
    if (original.id) {
      this.record(index, original);
      entry.artifact_id ??= original.id;
    }
  }

  /** The rewritten history: every message in input order, without the dropped ones. */
  output(): unknown[] {
    return this.dropped.size === 0 ? this.messages : this.messages.filter((_, i) => !this.dropped.has(i));
  }

  private record(index: number, p: Pending): void {
    if (!p.id) return;
    this.artifacts.push({
      id: p.id,
      message_index: index,
      kind: p.kind,
      tool_name: p.tool,
      tokens: p.tokens,
      sha256: p.sha256,
      ...(this.store === 'inline' ? { content: p.unit } : {}),
    });
    if (this.store !== 'server' || this.seen.has(p.id)) return;
    this.seen.add(p.id);
    this.offload.push({ id: p.id, kind: p.kind, tool_name: p.tool, content: p.json, sha256: p.sha256 });
  }

  replace(index: number, kind: UnitKind, slot: number, unit: unknown, action: ActionKind, original: Pending): boolean {
    return this.commit(index, this.format.replaceUnit(this.messages[index], kind, slot, unit), action, original);
  }
}
