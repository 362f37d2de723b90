import { ByTag } from '../tokens/by-tag.js';
import { bodyTagOf } from '../tokens/content-tag.js';
import { derived } from '../tokens/derived.js';
import { LOOKUP_MAX_CHARS, sha256Hex } from './address.js';
import type { FormatAdapter } from './format.js';
import { mayBeSigned } from './markers.js';
import { clearableArg } from './vocabulary.js';

/**
 * What a tool-result or tool-input placeholder is signed for: the call it belongs to, named by
 * its id, its tool, a digest of its arguments (those `clear_tool_inputs` may clear left out, so
 * that a call reads as the same call once its arguments are cleared or restored, and so do its
 * results) and its rank among the earlier calls of the history identical in all three. A placeholder copied into another call (another id, tool,
 * arguments or rank) or repeated with its call no longer verifies, while a history that really
 * repeats a call has a placeholder of its own for each repetition.
 */
export type Binding = string;

/**
 * Argument digests by the arguments object and tool: parsed arguments are one frozen object per
 * text (`parseArgs` keeps them), so a conversation's calls come back as the same objects on every
 * later call, and their digest is found without reading them again (a WeakMap: it goes with them).
 */
const argDigests = new WeakMap<object, Map<string | null, string>>();

/** The digest of a call's arguments, those `clear_tool_inputs` may clear left out. */
function argsDigest(name: string | null, args: Record<string, unknown>): string {
  const known = argDigests.get(args)?.get(name);
  if (known !== undefined) return known;
  const kept = Object.entries(args).filter(([k, v]) => !clearableArg(name ?? '', k, v));
  const json = JSON.stringify(kept);
  // The same arguments in another object (a format whose arguments are objects in the message): a
  // short text's digest is found, a long one's computed (cheaper than finding it, `LOOKUP_MAX_CHARS`).
  const make = () => sha256Hex(json).slice(0, 32);
  const digest = json.length <= LOOKUP_MAX_CHARS ? derived.get(`args\0${json}`, make) : make();
  // Kept only for a frozen object (`parseArgs`'s), which no reader can change after.
  if (Object.isFrozen(args)) {
    const byName = argDigests.get(args) ?? new Map<string | null, string>();
    byName.set(name, digest);
    argDigests.set(args, byName);
  }
  return digest;
}

/** A call's identity before its rank: id, tool and arguments (undefined for a custom tool's input). */
function callIdentity(id: string, name: string | null, args: Record<string, unknown> | undefined): string {
  const digest = args === undefined ? derived.get('args\0', () => sha256Hex('').slice(0, 32)) : argsDigest(name, args);
  return JSON.stringify([id, name, digest]);
}

/** The binding of a call whose identity (`callIdentity`) is the `rank`th of its kind in the history. */
function ranked(identity: string, rank: number): Binding {
  return `${identity}#${rank}`;
}

/**
 * A message's sites as `bindings` reads them: each call's slot, id and identity, each result's
 * slot, call id and whether its text may hold a signed marker (`mayBeSigned`: read once per message).
 */
interface Sites {
  /** Each call's slot, id, identity, and its binding as the first of its kind (most calls are: one string kept). */
  readonly calls: readonly (readonly [slot: number, id: string, identity: string, first: Binding])[];
  readonly results: readonly (readonly [slot: number, callId: string, signed: boolean])[];
}

/** The characters of a message's sites (`ByTag`'s measure; a few for each number and flag). */
function siteChars(sites: Sites): number {
  let chars = 0;
  for (const [, id, identity, first] of sites.calls) chars += id.length + identity.length + first.length + 8;
  for (const [, callId] of sites.results) chars += callId.length + 12;
  return chars;
}

/**
 * A message's sites by its tag, under its format's name (`content-tag.ts`: equal tags are equal
 * messages; `by-tag.ts`: found by the tag itself): a message that came in before is read again
 * only by its tag, not its calls' arguments parsed, digested and stringified again. Content alone
 * (no secret, no scope): shared by every caller, as the token counts are. 8 MiB per thread, least
 * recently used out by halves.
 */
const sitesByTag = new ByTag<Sites>(8 * 1024 * 1024, siteChars, 96);

/** The sites of one message, found by its tag when it has one (`Sites`). */
function sitesOf(format: FormatAdapter, message: unknown): Sites {
  const tag = bodyTagOf(message);
  const known = tag === undefined ? undefined : sitesByTag.get(tag, format.name);
  if (known !== undefined) return known;
  const sites: Sites = {
    calls: format.callSites(message).map((c) => {
      const identity = callIdentity(c.id, c.name, c.args);
      return [c.slot, c.id, identity, ranked(identity, 0)] as const;
    }),
    results: format.resultSites(message).map((r) => [r.slot, r.callId, mayBeSigned(r.text)] as const),
  };
  if (tag !== undefined) sitesByTag.set(tag, format.name, sites);
  return sites;
}

/** The bindings of every call and result site of a history, by message index and slot. */
export interface Bindings {
  call(index: number, slot: number): Binding | undefined;
  result(index: number, slot: number): Binding | undefined;
  /** Whether the result's text may hold a signed marker (`mayBeSigned`); false for no such result. */
  signed(index: number, slot: number): boolean;
}

/**
 * The bindings of a history's sites, in one pass: each call is ranked among the earlier calls
 * identical to it, and each result takes the binding of the nearest earlier call with its id (a
 * result without one is ranked among the earlier results without a call under the same id).
 * Linear in the history (each call's arguments are hashed once).
 */
export function bindings(format: FormatAdapter, messages: readonly unknown[]): Bindings {
  // By message index, then slot (no key string per site).
  const calls: (Binding[] | undefined)[] = new Array(messages.length);
  const results: (Binding[] | undefined)[] = new Array(messages.length);
  const signed: (boolean[] | undefined)[] = new Array(messages.length);
  const seen = new Map<string, number>();
  const latest = new Map<string, Binding>();
  // Slots are -1 (the message itself) or an index: kept one up, so that every one is an array index.
  const put = <T>(table: (T[] | undefined)[], index: number, slot: number, value: T) => {
    const bySlot = table[index] ?? [];
    bySlot[slot + 1] = value;
    table[index] = bySlot;
  };
  const next = (identity: string) => {
    const rank = seen.get(identity) ?? 0;
    seen.set(identity, rank + 1);
    return rank;
  };
  messages.forEach((message, index) => {
    const sites = sitesOf(format, message);
    for (const [slot, id, identity, first] of sites.calls) {
      const rank = next(identity);
      const binding = rank === 0 ? first : ranked(identity, rank);
      put(calls, index, slot, binding);
      latest.set(id, binding);
    }
    for (const [slot, callId, marked] of sites.results) {
      if (marked) put(signed, index, slot, true);
      const bound = latest.get(callId);
      if (bound !== undefined) {
        put(results, index, slot, bound);
        continue;
      }
      const orphan = callIdentity(callId, null, undefined);
      put(results, index, slot, ranked(orphan, next(orphan)));
    }
  });
  return {
    call: (index, slot) => calls[index]?.[slot + 1],
    result: (index, slot) => results[index]?.[slot + 1],
    signed: (index, slot) => signed[index]?.[slot + 1] === true,
  };
}
