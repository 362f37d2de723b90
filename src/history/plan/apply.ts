import { hasTag, tagDerived, tagKnown, tagOf } from '../../tokens/content-tag.js';
import type { FormatAdapter } from '../format.js';
import type { Action, ActionKind, Item } from '../types.js';
import type { ArtifactRef, Edit, Entry, Insert, Offload, OriginalSpec, Plan } from './types.js';

/** What applying needs besides the plan: the input and a way to count a message. */
export interface PlanSource {
  readonly format: FormatAdapter;
  readonly messages: readonly unknown[];
  readonly counts: readonly number[];
}

/** Counts one message's tokens as the request counts them (the caller's tokenizer). */
export type Count = (message: unknown) => number;

/** A plan rendered: the output, the record per input message, and what it offloads. */
export interface Applied {
  readonly messages: unknown[];
  /** Tokens of each output message. */
  readonly counts: number[];
  /** For each output message, the input message it is (edited or not), or -1 for a message written anew. */
  readonly sources: number[];
  /** For each output message, the plan entry that produced it. */
  readonly entryOf: number[];
  /** One per input message: what happened to it and the tokens it freed (made when first read). */
  readonly actions: Action[];
  /** The input messages edited or removed, ascending (those whose action is not `keep`). */
  readonly edited: readonly number[];
  readonly artifacts: ArtifactRef[];
  /** Originals to persist (`store: server`), each once. */
  readonly offload: Offload[];
  /** Tokens the reductions removed, and the tokens the written messages add (summaries). */
  readonly freed: number;
  readonly added: number;
  /** Output position of each keyed entry (its last message). */
  readonly positions: Map<string, number>;
}

const RANK: Record<ActionKind, number> = { keep: 0, rewrite: 1, truncate: 2, clear: 3, offload: 3, summarize: 4, drop: 5 };

function actionOf(edit: Edit): ActionKind {
  return edit.op === 'unit' ? edit.action : 'rewrite';
}

/**
 * One edit rendered through the adapter, on the message as the earlier edits left it; tagged by
 * what it was made from when the message came in tagged (`tokens/content-tag.ts`), or by `known`:
 * the tag that naming gave the same edit of the same message before (`tagKnown`).
 */
export function renderEdit(format: FormatAdapter, original: unknown, current: unknown, edit: Edit, known?: string): unknown {
  const rendered = render(format, original, current, edit);
  if (rendered !== current && hasTag(original) && hasTag(current)) {
    if (known !== undefined) tagKnown(rendered, known);
    else tagDerived(rendered, () => `${format.name}\0${tagOf(original)}\0${tagOf(current)}\0${JSON.stringify(edit)}`);
  }
  return rendered;
}

function render(format: FormatAdapter, original: unknown, current: unknown, edit: Edit): unknown {
  switch (edit.op) {
    case 'unit': {
      const { unit } = edit;
      const was = format.unitAt(original, unit.kind, unit.slot);
      const now = unit.kind === 'result' ? format.resultWithText(was, unit.text) : format.callWithArgs(was, unit.args);
      return format.replaceUnit(current, unit.kind, unit.slot, now);
    }
    case 'strip-thinking':
      return format.withoutThinking(current) ?? current;
    case 'append-text':
      return format.appendText(current, edit.text);
    case 'drop-last-text':
      return format.dropLastText(current, edit.collapse);
  }
}

/** The messages an insert writes, in this format. */
export function renderInsert(format: FormatAdapter, insert: Insert): unknown[] {
  if (insert.kind === 'text') return [format.textMessage(insert.role, insert.text)];
  const exchange = format.summaryExchange(insert.id, insert.text, { signed: insert.signed, reasoning: insert.reasoning });
  if (!exchange) throw new Error(`${format.name} takes no synthetic tool exchange: the plan should have asked`);
  return exchange;
}

/** An edited input message: its rendering, its action, and the tokens its reductions freed and its additions add. */
function renderEntry(
  h: PlanSource,
  plan: Plan,
  entry: Extract<Entry, { index: number }>,
  count: Count,
): { message: unknown; tokens: number; action: Action; added: number } {
  const { index, edits } = entry;
  const original = h.messages[index];
  const before = h.counts[index] as number;
  const action: Action = { index, action: 'keep', tokens_freed: 0 };
  if (edits.length === 0) return { message: original, tokens: before, action, added: 0 };
  // Start from what the plan's builder already rendered, if anything.
  const memo = plan.memo?.get(index);
  const start = memo && memo.edits <= edits.length ? memo.edits : 0;
  let message = start > 0 && memo ? memo.message : original;
  let reduced = message;
  edits.forEach((edit, k) => {
    if (RANK[actionOf(edit)] >= RANK[action.action]) action.action = actionOf(edit);
    const id = 'artifactId' in edit ? edit.artifactId : null;
    if (id && action.artifact_id === undefined) action.artifact_id = id;
    if (k < start) return;
    message = renderEdit(h.format, original, message, edit);
    if (edit.op !== 'append-text') reduced = message;
  });
  const known = (m: unknown): number | undefined => {
    if (m === original) return before;
    return start > 0 && memo && m === memo.message ? memo.tokens : undefined;
  };
  const reducedTokens = known(reduced) ?? count(reduced);
  const tokens = message === reduced ? reducedTokens : count(message);
  action.tokens_freed = before - reducedTokens;
  return { message, tokens, action, added: tokens - reducedTokens };
}

/** The response's artifact list and the originals to persist, under each original's store policy. */
function record(specs: readonly OriginalSpec[]): { artifacts: ArtifactRef[]; offload: Offload[] } {
  const artifacts: ArtifactRef[] = [];
  const offload: Offload[] = [];
  const seen = new Set<string>();
  for (const a of specs) {
    if (a.store === 'none') continue;
    artifacts.push({
      id: a.id,
      message_index: a.message_index,
      kind: a.kind,
      tool_name: a.tool_name,
      tokens: a.tokens,
      sha256: a.sha256,
      ...(a.store === 'inline' ? { content: a.value } : {}),
    });
    if (a.store !== 'server' || seen.has(a.id)) continue;
    seen.add(a.id);
    // Its JSON read only when written (a plan applied to be measured never writes it).
    offload.push({
      id: a.id,
      kind: a.kind,
      tool_name: a.tool_name,
      get content() {
        return a.json;
      },
      sha256: a.sha256,
    });
  }
  return { artifacts, offload };
}

/**
 * Renders a plan: the only place a strategy's decisions become wire JSON (through the adapter).
 * Kept messages are the very values that came in; edited ones are built anew; removed ones are
 * recorded as `summarize` or `drop` with all their tokens freed; written ones add their tokens.
 * Each input message gets one action: its strongest edit's (ties to the later), the tokens its
 * reductions freed, and the first artifact its edits offloaded.
 */
export function applyPlan(h: PlanSource, plan: Plan, count: Count): Applied {
  // A plan measured by one stage is often applied again by the next, on the same view: once is enough.
  const known = applied.get(plan);
  if (known && known.h === h && known.count === count) return known.applied;
  const out = renderPlan(h, plan, count);
  applied.set(plan, { h, count, applied: out });
  return out;
}

/** The last rendering of each plan (plans and views are not changed once made), for as long as the plan lives. */
const applied = new WeakMap<Plan, { h: PlanSource; count: Count; applied: Applied }>();

function renderPlan(h: PlanSource, plan: Plan, count: Count): Applied {
  // The actions of the messages edited or removed, by index; every other one is kept (the whole
  // list is made when read: most renderings are measured, and only what changed is read there).
  const changed: Action[] = new Array(h.messages.length);
  const messages: unknown[] = [];
  const counts: number[] = [];
  const sources: number[] = [];
  const entryOf: number[] = [];
  const positions = new Map<string, number>();
  let freed = 0;
  let added = 0;
  plan.entries.forEach((entry, e) => {
    if ('index' in entry && entry.edits.length === 0) {
      // Kept as it came (most entries): no rendering, nothing freed.
      const index = entry.index;
      messages.push(h.messages[index]);
      counts.push(h.counts[index] as number);
      sources.push(index);
      entryOf.push(e);
    } else if ('index' in entry) {
      const out = renderEntry(h, plan, entry, count);
      changed[entry.index] = out.action;
      freed += out.action.tokens_freed;
      added += out.added;
      messages.push(out.message);
      counts.push(out.tokens);
      sources.push(entry.index);
      entryOf.push(e);
    } else {
      for (const insert of entry.insert) {
        for (const m of renderInsert(h.format, insert)) {
          const tokens = count(m);
          messages.push(m);
          counts.push(tokens);
          sources.push(-1);
          entryOf.push(e);
          added += tokens;
        }
      }
    }
    if (entry.key !== undefined) positions.set(entry.key, messages.length - 1);
  });
  for (const [index, removal] of plan.removed) {
    const tokens = h.counts[index] as number;
    const action: Action = { index, action: removal.action, tokens_freed: tokens };
    if (removal.artifactId) action.artifact_id = removal.artifactId;
    changed[index] = action;
    freed += tokens;
  }
  const edited: number[] = [];
  for (let index = 0; index < changed.length; index++) {
    const action = changed[index];
    if (action !== undefined && action.action !== 'keep') edited.push(index);
  }
  let actions: Action[] | undefined;
  // The artifact list and the originals to write, made when read: a plan applied to be measured
  // or viewed (most of a fit call's renderings) reads neither.
  let recorded: ReturnType<typeof record> | undefined;
  return {
    messages,
    counts,
    sources,
    entryOf,
    get actions() {
      if (actions === undefined) {
        actions = new Array(changed.length);
        for (let index = 0; index < changed.length; index++) {
          actions[index] = changed[index] ?? { index, action: 'keep', tokens_freed: 0 };
        }
      }
      return actions;
    },
    edited,
    get artifacts() {
      recorded ??= record(plan.artifacts);
      return recorded.artifacts;
    },
    get offload() {
      recorded ??= record(plan.artifacts);
      return recorded.offload;
    },
    freed,
    added,
    positions,
  };
}

/** The tokens the messages an insert writes would take (rendered here, counted by the caller's tokenizer). */
export function insertTokens(format: FormatAdapter, inserts: readonly Insert[], count: Count): number {
  let tokens = 0;
  for (const insert of inserts) for (const m of renderInsert(format, insert)) tokens += count(m);
  return tokens;
}

/**
 * The history-model items of the messages an insert writes: their roles, for the format's order
 * rules (which neighbours a summary may stand between). Undefined when the format writes no such
 * message (a synthetic tool exchange where calls must name declared tools).
 */
export function insertItems(format: FormatAdapter, inserts: readonly Insert[]): Item[] | undefined {
  const messages: unknown[] = [];
  for (const insert of inserts) {
    if (insert.kind === 'exchange' && !format.summaryExchange(insert.id, insert.text, insert)) return undefined;
    messages.push(...renderInsert(format, insert));
  }
  return format.parse(messages).items;
}
