import type { Addresser } from '../../history/address.js';
import type { OriginalKind } from '../../history/artifact-kinds.js';
import type { OriginalSpec, StorePolicy } from '../../history/plan/types.js';
import { rangePayload } from '../../history/vocabulary.js';
import { taggedSha256, tagOfList } from '../../tokens/content-tag.js';
import type { PreparedHistory } from '../types.js';

/** A summarized range as an artifact: what `expand` needs to put it back. */
export interface RangeArtifact {
  /** The range's JSON (`{messages, previous_id}`): what is stored, hashed and shared in flight. */
  json: string;
  sha256: string;
  /** The id the summary names (null with `store: none`). */
  id: string | null;
  /** What the plan offloads (none with `store: none`). */
  specs: OriginalSpec[];
  /** The range's id under the caller's key whatever `store` says: what keys this caller's values derived from the range. */
  own: string;
}

/** The kinds of a range artifact (`history/artifact-kinds.ts`): a summary's, a section summary's, fit's window's. */
export type RangeKind = Extract<OriginalKind, 'summary_range' | 'section_range' | 'window_range'>;

/**
 * The range artifacts one caller's request built, by the history they were built over (its message
 * array: fit's views are shared, `viewOf`) and the range: a call prices a summary in a dry run,
 * then makes it, then plans the next prepared range over the same messages, and each would
 * stringify and hash the whole range again (about 270 messages on the load benchmark's history,
 * four times per fit call). Keyed by the caller's addresser, so never shared between callers; the
 * service makes one per request, so the memo goes with the request (a library user's default
 * caller keeps its first 16 ranges per history, found again only for the same array).
 */
const builtRanges = new WeakMap<Addresser, WeakMap<readonly unknown[], Map<string, RangeArtifact>>>();
const RANGES_PER_HISTORY = 16;

/** The originals of `indexes` (after an earlier summary `previousId`) as one artifact, following `store`. */
export function rangeArtifact(
  kind: RangeKind,
  h: PreparedHistory,
  indexes: readonly number[],
  previousId: string | null,
  store: StorePolicy,
  address: Addresser,
): RangeArtifact {
  const tokens = indexes.reduce((n, i) => n + (h.counts[i] as number), 0);
  const key = `${kind}\0${store}\0${previousId}\0${tokens}\0${indexes.join(',')}`;
  let byHistory = builtRanges.get(address);
  if (!byHistory) {
    byHistory = new WeakMap();
    builtRanges.set(address, byHistory);
  }
  let memo = byHistory.get(h.messages);
  if (!memo) {
    memo = new Map();
    byHistory.set(h.messages, memo);
  }
  const known = memo.get(key);
  // A copy of what the plan takes (a plan's artifact list is its own to extend).
  // A plan's artifact list is its own to extend (the specs themselves are read-only).
  if (known) return copied(known);
  const built = buildRange(kind, h, indexes, previousId, store, address, tokens);
  if (memo.size < RANGES_PER_HISTORY) memo.set(key, built);
  return built;
}

/** A copy of a range artifact with a list of its own, its JSON read through (a spread would make it). */
function copied(r: RangeArtifact): RangeArtifact {
  return {
    get json() {
      return r.json;
    },
    sha256: r.sha256,
    id: r.id,
    specs: [...r.specs],
    own: r.own,
  };
}

function buildRange(
  kind: RangeKind,
  h: PreparedHistory,
  indexes: readonly number[],
  previousId: string | null,
  store: StorePolicy,
  address: Addresser,
  tokens: number,
): RangeArtifact {
  const messages = indexes.map((i) => h.messages[i]);
  const value = rangePayload(messages, previousId);
  // Messages that came in (tagged by their bytes) name the range without reading it: its digest
  // is found again on the next call over the same messages, and its JSON made only if read.
  let json: string | undefined;
  const text = () => {
    json ??= JSON.stringify(value);
    return json;
  };
  const tags = tagOfList(messages);
  const { id, sha256 } =
    tags === undefined ? address(text()) : address.ofDigest(taggedSha256(`range\0${tags}\0${previousId}`, text));
  const spec: OriginalSpec = {
    id,
    sha256,
    get json() {
      return text();
    },
    value,
    kind,
    tool_name: null,
    tokens,
    message_index: indexes[0] as number,
    store,
  };
  return {
    get json() {
      return text();
    },
    sha256,
    id: store === 'none' ? null : id,
    specs: store === 'none' ? [] : [spec],
    own: id,
  };
}
