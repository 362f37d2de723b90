import { createHash } from 'node:crypto';
import { CONVERSATION_KIND } from '../history/artifact-kinds.js';
import type { ArtifactService, Caller } from '../service/artifacts.js';
import { bodyTagOf } from '../tokens/content-tag.js';
import { derived } from '../tokens/derived.js';
import type { CacheMarkers } from './cache-markers.js';

/**
 * A conversation's state, kept in the artifact store so that each upstream request is the
 * previous upstream request plus what the client appended, until fit decides that a new
 * reduction pays. The client resends its whole history every call; the state says, in the
 * client's own message indexes, what the proxy sent upstream for the history it had then: runs
 * of the client's messages (taken as the client sends them now, its cache markers included) and
 * messages of ours (placeholders, summaries). It is found again by a hash of the client's history
 * up to that point, so a client that rewrites its past simply finds no state, and starts anew.
 */

/** One stretch of the upstream history: the client's messages `[from, to)`, or a message of ours. */
export type Slot =
  | { readonly run: readonly [number, number] }
  /** A message of ours; `of`: the client message it was rewritten from (its cache markers follow the client's). */
  | { readonly ours: unknown; readonly of?: number };

export interface ConversationState {
  readonly v: 1;
  /** How many client messages the upstream history stands for. */
  readonly length: number;
  readonly upstream: readonly Slot[];
  /** Model calls of this conversation the proxy has forwarded, this one included (absent in states of older builds). */
  readonly calls?: number;
  /** `calls` at the last reduction that broke the cached prefix (absent: none yet, or an older build's state). */
  readonly brokeAt?: number;
  /**
   * Tokens the upstream history leaves out of the client's (the reductions in effect, as fit
   * counted each when it made it), for the conversation record's tokens the client had; absent in
   * older states: 0.
   */
  readonly removed?: number;
}

/** What the previous call's answer said: the provider's usage, and how many upstream messages it covers. */
export interface RecordedUsage {
  readonly usage: Record<string, unknown>;
  readonly covered: number;
}

/** How far back, in client messages, the previous call's history may end: what one turn can add. */
export const LOOKBACK = 64;

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The key of a conversation: the provider, the client's own session id if it sends one, and the
 * system prompt and first message (so the sub-agents of one session are conversations of their own).
 */
export function conversationKey(
  provider: { readonly name: string; readonly markers: CacheMarkers },
  session: string | undefined,
  system: unknown,
  first: unknown,
): string {
  const { normalized } = provider.markers;
  return sha(JSON.stringify([provider.name, session ?? null, normalized(system ?? null), normalized(first ?? null)]));
}

/**
 * `hashes[k]`: the hash of the conversation key and the client's first `k` messages (normalized).
 * With `bytes`, `bytes[i]` is set to the UTF-8 bytes of message `i`'s own JSON, read off its
 * normalized JSON where that is the same text (what the proxy's fit request weighs without
 * serializing it again: `fitBytes`).
 */
export function prefixHashes(key: string, messages: readonly unknown[], markers: CacheMarkers, bytes?: number[]): string[] {
  const out = [key];
  let h = key;
  for (const m of messages) {
    const { digest, length } = measured(m, markers);
    if (bytes) bytes.push(length);
    h = createHash('sha256').update(h).update('\0').update(digest).digest('hex');
    out.push(h);
  }
  return out;
}

/**
 * A client message's digest for the prefix hashes (its JSON with the cache markers left out) and
 * the UTF-8 bytes of its JSON: found by its content tag when it came in a body (an agent sends
 * the same messages on every call: not serialized nor hashed again), computed otherwise.
 */
function measured(m: unknown, markers: CacheMarkers): { digest: string; length: number } {
  const compute = () => {
    const stripped = markers.stripped(m);
    const json = JSON.stringify(stripped) ?? 'null';
    return `${sha(json)} ${Buffer.byteLength(stripped === m ? json : (JSON.stringify(m) ?? 'null'))}`;
  };
  const tag = bodyTagOf(m);
  const known = tag === undefined ? compute() : derived.get(`prefix-message\0${markers.marker}\0${tag}`, compute);
  const space = known.indexOf(' ');
  return { digest: known.slice(0, space), length: Number(known.slice(space + 1)) };
}

/**
 * The UTF-8 bytes of a request as JSON whose `messages` are `resolved` (one per slot of
 * `upstream`, expanded), counted without serializing the history again: the request with no
 * messages, then each message's JSON (a client message's as `prefixHashes` measured it into
 * `bytes`, a message of ours serialized: they are few and short) and the commas between them.
 * What decides whether the proxy's fit runs on a worker, exactly as its serialized body would.
 */
export function requestBytes(
  request: Record<string, unknown>,
  upstream: readonly Slot[],
  resolved: readonly unknown[],
  bytes: readonly number[],
): number {
  let total = Buffer.byteLength(JSON.stringify({ ...request, messages: [] })) + Math.max(0, resolved.length - 1);
  upstream.forEach((slot, j) => {
    total += 'run' in slot ? (bytes[slot.run[0]] as number) : Buffer.byteLength(JSON.stringify(resolved[j]) ?? 'null');
  });
  return total;
}

/** The upstream history a state stands for, over the client's current messages. */
export function resolve(upstream: readonly Slot[], messages: readonly unknown[], markers: CacheMarkers): unknown[] {
  const out: unknown[] = [];
  for (const slot of upstream) {
    if ('run' in slot) {
      for (let i = slot.run[0]; i < slot.run[1]; i++) out.push(messages[i]);
    } else out.push(slot.of !== undefined ? markers.follow(slot.ours, messages[slot.of]) : slot.ours);
  }
  return out;
}

/** Slots of one message each, merged: consecutive client messages become one run. */
export function compress(slots: readonly Slot[]): Slot[] {
  const out: Slot[] = [];
  for (const slot of slots) {
    const last = out[out.length - 1];
    if ('run' in slot && last && 'run' in last && last.run[1] === slot.run[0]) {
      out[out.length - 1] = { run: [last.run[0], slot.run[1]] };
    } else out.push(slot);
  }
  return out;
}

/** One slot per upstream message (runs expanded). */
export function expandSlots(upstream: readonly Slot[]): Slot[] {
  const out: Slot[] = [];
  for (const slot of upstream) {
    if ('run' in slot) for (let i = slot.run[0]; i < slot.run[1]; i++) out.push({ run: [i, i + 1] });
    else out.push(slot);
  }
  return out;
}

/** Whether a state's upstream is the client's history itself, untouched. */
export function untouched(upstream: readonly Slot[], length: number): boolean {
  if (length === 0) return upstream.length === 0;
  const only = upstream[0];
  return upstream.length === 1 && only !== undefined && 'run' in only && only.run[0] === 0 && only.run[1] === length;
}

function isState(value: unknown): value is ConversationState {
  const v = value as Partial<ConversationState> | null;
  return typeof v === 'object' && v !== null && v.v === 1 && typeof v.length === 'number' && Array.isArray(v.upstream);
}

/** The store's ids of a conversation's records: its state, and the usage answered, after `k` client messages. */
const stateId = (caller: Caller, hash: string) => caller.address(`proxy-state\0${hash}`).id;
const usageId = (caller: Caller, hash: string) => caller.address(`proxy-usage\0${hash}`).id;

export interface Found {
  /** The client messages the state stands for. */
  readonly k: number;
  readonly state: ConversationState;
  readonly usage: RecordedUsage | undefined;
}

/** The prefixes looked up first: an agent's turn adds one to a few messages, so the previous call's state is among the nearest. */
const NEAR = 6;

/**
 * The state of the longest prefix of the client's history (at most `LOOKBACK` messages back) that
 * the proxy saw before, with the usage its answer reported; undefined when there is none. One
 * read of the nearest `NEAR` prefixes, through the artifact service (a store failure comes back as
 * its coded error), and a second of the rest only when none of those is known: most calls name
 * and look up 12 records, not 130.
 */
export async function findState(
  artifacts: ArtifactService,
  caller: Caller,
  hashes: readonly string[],
): Promise<Found | undefined> {
  const n = hashes.length - 1;
  const ks: number[] = [];
  for (let k = n; k >= Math.max(1, n - LOOKBACK); k--) ks.push(k);
  return (
    (await lookup(artifacts, caller, hashes, ks.slice(0, NEAR))) ??
    (ks.length > NEAR ? await lookup(artifacts, caller, hashes, ks.slice(NEAR)) : undefined)
  );
}

/** The state of the first of `ks` (longest first) that the store knows. */
async function lookup(
  artifacts: ArtifactService,
  caller: Caller,
  hashes: readonly string[],
  ks: readonly number[],
): Promise<Found | undefined> {
  const ids = ks.flatMap((k) => [stateId(caller, hashes[k] as string), usageId(caller, hashes[k] as string)]);
  const found = await artifacts.records(caller, ids);
  for (const k of ks) {
    const hash = hashes[k] as string;
    const record = found.get(stateId(caller, hash));
    if (!record) continue;
    const state = parsed(record.content);
    if (!isState(state) || state.length !== k) continue;
    const answered = found.get(usageId(caller, hash));
    const usage = answered ? (parsed(answered.content) as RecordedUsage | undefined) : undefined;
    return { k, state, usage };
  }
  return undefined;
}

/** A record's JSON, or undefined when it is not JSON. */
function parsed(content: string): unknown {
  try {
    return JSON.parse(content) as unknown;
  } catch {
    return undefined;
  }
}

/** One record of the proxy's own, stored for the artifacts' TTL. */
function record(kind: string, id: string, content: string) {
  return { id, kind, tool_name: null, content, sha256: sha(content) };
}

/** Stores a conversation's state after `state.length` client messages. */
export async function saveState(
  artifacts: ArtifactService,
  caller: Caller,
  hash: string,
  state: ConversationState,
): Promise<void> {
  await artifacts.persist(caller, [record('proxy_state', stateId(caller, hash), JSON.stringify(state))]);
}

/** Stores the usage the answer to the call after `k` client messages reported. */
export async function saveUsage(artifacts: ArtifactService, caller: Caller, hash: string, usage: RecordedUsage): Promise<void> {
  await artifacts.persist(caller, [record('proxy_usage', usageId(caller, hash), JSON.stringify(usage))]);
}

/**
 * Records which artifacts a conversation's upstream history names (its placeholders and
 * summaries), in the scope its artifacts live in: what the MCP `search` tool's `conversation`
 * filter reads. One small record per reduction.
 */
export async function saveIndex(
  artifacts: ArtifactService,
  caller: Caller,
  conversation: string,
  upstream: readonly Slot[],
): Promise<void> {
  const ids = new Set<string>();
  for (const slot of upstream)
    if ('ours' in slot) for (const id of JSON.stringify(slot.ours).match(/art_[0-9a-f]{24}/g) ?? []) ids.add(id);
  if (ids.size === 0) return;
  const content = JSON.stringify({ conversation, ids: [...ids] });
  const { id, sha256 } = caller.address(`proxy-conversation\0${content}`);
  await artifacts.persist(caller, [{ id, kind: CONVERSATION_KIND, tool_name: null, content, sha256 }]);
}
