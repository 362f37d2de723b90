import type { IncomingHttpHeaders } from 'node:http';
import type { BypassReason } from './bypass.js';
import {
  type ConversationState,
  compress,
  conversationKey,
  expandSlots,
  type Found,
  findState,
  prefixHashes,
  requestBytes,
  resolve,
  type Slot,
  untouched,
} from './conversation.js';
import { type FitRun, runFit } from './fit.js';
import { fitRequest, tooSmall, tooSoon } from './fit-policy.js';
import type { Provider, Reducible } from './providers.js';

/**
 * One proxied request's reduction: the conversation's state found, the upstream history it
 * extends to (the previous upstream history plus what the client appended), fit over that with
 * the usage the last answer reported, and the new state. It knows the service only as a route
 * does (`OPERATIONS['/v1/fit']`), and nothing of strategies.
 */

export interface ReduceDeps extends FitRun {
  /** Who the conversation's state belongs to (never shared between two users of one proxy). */
  readonly owner: FitRun['caller'];
  /** Fit options: the configured defaults with the request's `x-compactor-options` over them. */
  readonly options: Record<string, unknown>;
}

/** What to send upstream and what to remember. */
export interface Reduction {
  /** The new history to send, or undefined: the client's body goes as it came, byte for byte. */
  readonly history: unknown[] | undefined;
  /** `reduced` (fit applied), `kept` (the previous reduction extended), `unchanged` (nothing reduced, ever). */
  readonly action: 'reduced' | 'kept' | 'unchanged';
  readonly tokens: { readonly before: number; readonly after: number; readonly saved: number };
  /** A short id of the conversation, for the response header and the logs. */
  readonly conversation: string;
  /** Whether a message already sent upstream changed (the cached prefix breaks). */
  readonly prefixBreak: boolean;
  /** The state to store for the client's whole history, under `hash`. */
  readonly state: ConversationState;
  readonly hash: string;
  /** How many upstream messages the answer's usage will cover (the reply included). */
  readonly covers: number;
  /**
   * Tokens the history sent on this call leaves out of the client's: what this reduction removed
   * and what the earlier ones it extends removed (as fit counted them), so that the record's tokens
   * the client had are `tokens.after + removed` on a call that only extends a reduction too.
   */
  readonly removed: number;
  /** The context window fit measured against, when known (the conversation record's `tokens.window`). */
  readonly window?: number | null;
  /** What a new reduction made (`reduced` only): for the conversation record. */
  readonly made?: Made;
}

/**
 * What one reduction made, for the conversation record: ids and counts, and the summary's text
 * (stored apart, never recorded). Positions are in the upstream history, the messages as they went
 * to the provider (the client's own until the conversation's first reduction).
 */
export interface Made {
  /** The first upstream message already sent that changed (the provider rewrites its cache from there); null when the prefix held. */
  readonly brokenAt: number | null;
  /** Tokens the provider had cached that this call sends again changed (fit's `rewrite_tokens`); 0 when the prefix held. */
  readonly rewritten: number;
  /** The originals fit offloaded: where each came from, and its size. */
  readonly artifacts: readonly MadeArtifact[];
  /** The summary fit wrote, or null. */
  readonly summary: MadeSummary | null;
}

export interface MadeArtifact {
  readonly id: string;
  readonly kind: string;
  readonly tool_name: string | null;
  readonly message_index: number;
  readonly tokens: number;
}

export interface MadeSummary {
  readonly id: string;
  readonly text: string;
  readonly message_index: number;
  readonly covered_messages: number;
  readonly summarizer: 'llm' | 'extractive';
}

/** A refusal to reduce that sends the request on as it came: its reason for `x-compactor: bypass`. */
export class Bypass extends Error {
  constructor(readonly reason: BypassReason) {
    super(reason);
  }
}

/** Fit's answer, as far as the proxy reads it. */
export interface FitValue {
  messages: unknown[];
  applied: boolean;
  tokens: { before: number; after: number; saved: number };
  target?: number;
  cost?: { decision?: string; rewrite_tokens?: number };
  artifacts?: MadeArtifact[];
  summary?: MadeSummary | null;
}

/** What fit's applied answer made, as the record keeps it. */
function madeBy(value: FitValue, brokenAt: number | null): Made {
  const s = value.summary;
  return {
    brokenAt,
    rewritten: brokenAt === null ? 0 : Math.max(0, value.cost?.rewrite_tokens ?? 0),
    artifacts: (value.artifacts ?? []).map((a) => ({
      id: a.id,
      kind: a.kind,
      tool_name: a.tool_name,
      message_index: a.message_index,
      tokens: a.tokens,
    })),
    summary: s
      ? {
          id: s.id,
          text: s.text,
          message_index: s.message_index,
          covered_messages: s.covered_messages,
          summarizer: s.summarizer,
        }
      : null,
  };
}

/** The upstream history's slots after fit: kept messages stay what they were (a client run or ours), the rest are ours. */
function slotsAfter(
  before: readonly Slot[],
  output: readonly unknown[],
  input: readonly unknown[],
  sources: readonly number[],
): Slot[] {
  return output.map((message, j) => {
    const src = sources[j] ?? -1;
    const was = src >= 0 ? before[src] : undefined;
    if (was && message === input[src]) return was;
    const of = was && 'run' in was ? was.run[0] : was && 'ours' in was ? was.of : undefined;
    return of === undefined ? { ours: message } : { ours: message, of };
  });
}

/** The first upstream position whose message differs between two slot lists (their common length if none). */
function firstChange(a: readonly Slot[], b: readonly Slot[]): number {
  const n = Math.min(a.length, b.length);
  // A slot fit kept is the same object (`slotsAfter`): only the others are compared by their JSON.
  for (let i = 0; i < n; i++) if (a[i] !== b[i] && JSON.stringify(a[i]) !== JSON.stringify(b[i])) return i;
  return n;
}

/** A request's history extended from its conversation's state: what would go upstream with no new reduction. */
export interface Extension {
  readonly history: unknown[];
  readonly found: Found | undefined;
  /** The upstream history before fit: the previous one's slots, then the client's appended messages. */
  readonly before: Slot[];
  readonly extended: unknown[];
  readonly key: string;
  readonly hashes: string[];
  /** The UTF-8 bytes of each client message's JSON (`prefixHashes`). */
  readonly bytes: readonly number[];
  /** The provider's cache markers (messages of ours follow the client's). */
  readonly markers: Provider['markers'];
}

/**
 * Finds the conversation and extends its previous upstream history with what the client appended
 * since (one bounded read of the store). Throws `Bypass` where the request should go on as it came
 * (no history, a conversation the provider keeps: `Provider.keptUpstream`).
 */
export async function extend(
  deps: Pick<ReduceDeps, 'compactor' | 'owner'>,
  provider: Provider,
  reducible: Reducible,
  body: Record<string, unknown>,
  headers: IncomingHttpHeaders,
): Promise<Extension> {
  const history = body[reducible.history];
  if (!Array.isArray(history) || history.length === 0) throw new Bypass('no_history');
  const kept = provider.keptUpstream(body);
  if (kept) throw new Bypass(kept);
  const key = conversationKey(provider, provider.sessionOf(headers, body), reducible.systemOf(body), history[0]);
  const { markers } = provider;
  const bytes: number[] = [];
  const hashes = prefixHashes(key, history, markers, bytes);
  const found = await findState(deps.compactor.artifacts, deps.owner, hashes);
  const n = history.length;
  const before: Slot[] = found
    ? [...expandSlots(found.state.upstream), ...expandSlots([{ run: [found.k, n] }])]
    : expandSlots([{ run: [0, n] }]);
  return { history, found, before, extended: resolve(before, history, markers), key, hashes, bytes, markers };
}

/** This call's number in its conversation (1 for its first; an older build's state counts from 1 again). */
function callsOf(x: Extension): number {
  return (x.found?.state.calls ?? 0) + 1;
}

/** Tokens the conversation's earlier reductions removed, as its state says (0 for an older state or none). */
function removedBefore(x: Extension): number {
  const removed = x.found?.state.removed;
  return typeof removed === 'number' && Number.isFinite(removed) && removed > 0 ? removed : 0;
}

/** The reduction that sends the extension as it is (no new reduction: fit deferred, or ran out of time). */
export function asExtended(x: Extension): Reduction {
  const n = x.history.length;
  const brokeAt = x.found?.state.brokeAt;
  const upstream = compress(x.before);
  const same = untouched(upstream, n);
  const removed = same ? 0 : removedBefore(x);
  return {
    history: same ? undefined : x.extended,
    action: same ? 'unchanged' : 'kept',
    tokens: { before: 0, after: 0, saved: 0 },
    removed,
    conversation: x.key.slice(0, 16),
    prefixBreak: false,
    state: {
      v: 1,
      length: n,
      upstream,
      calls: callsOf(x),
      ...(brokeAt === undefined ? {} : { brokeAt }),
      ...(removed > 0 ? { removed } : {}),
    },
    hash: x.hashes[n] as string,
    covers: x.before.length + 1,
  };
}

/**
 * Lets fit decide over the extended history, with the usage the last answer reported: a new
 * reduction where it pays (or is forced), else the extension as it is. Throws what the service
 * throws (a history it refuses, the store down): the caller fails open.
 */
export async function decide(
  deps: ReduceDeps,
  reducible: Reducible,
  body: Record<string, unknown>,
  x: Extension,
): Promise<Reduction> {
  const request = fitRequest(reducible, body, x.extended, x.found?.usage, deps.options);
  const size = request.messages === x.extended ? requestBytes(request, x.before, x.extended, x.bytes) : undefined;
  const outcome = await runFit(deps, request, size);
  const value = outcome.value as FitValue;
  if (!value.applied) return { ...asExtended(x), tokens: value.tokens };
  const after = slotsAfter(x.before, value.messages, x.extended, outcome.sources ?? []);
  const upstream = compress(after);
  const previous = x.found ? expandSlots(x.found.state.upstream).length : 0;
  const changedAt = firstChange(x.before, after);
  const breaks = changedAt < previous;
  const calls = callsOf(x);
  if (breaks && (tooSmall(value, request.policy) || tooSoon(value, x.found?.state, calls))) {
    const { before } = value.tokens;
    return { ...asExtended(x), tokens: { before, after: before, saved: 0 } };
  }
  const n = x.history.length;
  const removed = removedBefore(x) + Math.max(0, value.tokens.saved);
  return {
    history: untouched(upstream, n) ? undefined : resolve(upstream, x.history, x.markers),
    action: 'reduced',
    tokens: value.tokens,
    removed,
    conversation: x.key.slice(0, 16),
    prefixBreak: breaks,
    state: {
      v: 1,
      length: n,
      upstream,
      removed,
      calls,
      ...(breaks ? { brokeAt: calls } : x.found?.state.brokeAt === undefined ? {} : { brokeAt: x.found.state.brokeAt }),
    },
    hash: x.hashes[n] as string,
    covers: after.length + 1,
    made: madeBy(value, breaks ? changedAt : null),
  };
}
