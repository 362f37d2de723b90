import { hash } from 'node:crypto';
import type { FormatAdapter } from '../history/format.js';
import { checkDepth } from '../history/limits.js';
import { type Slots, slotOf, withSlot } from './by-tag.js';
import { bodyTagOf } from './content-tag.js';
import { countText } from './encoders.js';
import { Generations } from './generations.js';
import type { ModelProfile } from './models.js';

export interface CounterStats {
  hits: number;
  misses: number;
  entries: number;
}

/** The most distinct key prefixes (profile, format, media counts) kept as shared strings. */
const MAX_PREFIXES = 1024;

/**
 * Counts messages with a per-message cache keyed by (profile, format, hash of the counted text and
 * media): an agent that calls on every step with its history grown by a few messages pays
 * tokenization for the new messages only. Hashing costs a small fraction of tokenizing.
 *
 * An entry costs about 120 bytes (a heap snapshot of 100,000 entries, issue 39): its key is one
 * prefix string shared by every entry of a profile, format and media count, followed by the hash
 * (28 characters) or the text itself when shorter than 48, so the count bound is a bound in bytes:
 * 200,000 entries, the default, hold about 30 MiB per thread once full (two generations of
 * plain maps, `generations.ts`). Keys built whole for each entry (a template of five pieces) cost 410 bytes each:
 * 87 MiB per thread. A message that came in tagged is kept under its tag alone (the string it
 * carries), its counts under up to four (profile, format) selectors (`by-tag.ts`): found without
 * a key joined and hashed for the lookup.
 */
export class TokenCounter {
  /** Counts by key (a text's, always holding `|`), and tagged messages' by their tag (`by-tag.ts`: base64, never `|`). */
  private readonly cache: Generations<number | Slots<number>> | undefined;
  /** The shared prefix of each (profile, format, media) key, by itself. */
  private readonly prefixes = new Map<string, string>();
  /** The selector of a tagged message's count, by profile id then format name: one string each, made once. */
  private readonly selectors = new Map<string, Map<string, string>>();
  private hits = 0;
  private misses = 0;

  /** @param cacheEntries how many message counts to keep; 0 disables the cache. */
  constructor(cacheEntries: number) {
    this.cache = cacheEntries > 0 ? new Generations<number | Slots<number>>(cacheEntries) : undefined;
  }

  /** A count found under a text's key (never a tag's: those hold no `|`). */
  private known(key: string): number | undefined {
    const found = this.cache?.get(key);
    return typeof found === 'number' ? found : undefined;
  }

  /** The counts kept under a tag (`by-tag.ts`), if any. */
  private tagged(tag: string): Slots<number> | undefined {
    const found = this.cache?.get(tag);
    return typeof found === 'object' ? found : undefined;
  }

  /** What selects a tagged message's count among its tag's slots: its profile and format. */
  private selector(profile: ModelProfile, format: FormatAdapter): string {
    let byFormat = this.selectors.get(profile.id);
    if (byFormat === undefined) {
      byFormat = new Map();
      if (this.selectors.size < MAX_PREFIXES) this.selectors.set(profile.id, byFormat);
    }
    let selector = byFormat.get(format.name);
    if (selector === undefined) {
      selector = `${profile.id}|${format.name}`;
      byFormat.set(format.name, selector);
    }
    return selector;
  }

  /** A cache key: the shared string of `prefix` (one per distinct prefix) and `rest`. */
  private key(prefix: string, rest: string): string {
    let shared = this.prefixes.get(prefix);
    if (shared === undefined) {
      shared = prefix;
      if (this.prefixes.size < MAX_PREFIXES) this.prefixes.set(prefix, prefix);
    }
    return shared + rest;
  }

  /** Tokens of one message: its content, media at flat rates, and the per-message framing. */
  countMessage(format: FormatAdapter, profile: ModelProfile, message: unknown): number {
    // A message tagged by its bytes (`content-tag.ts`) is found by its tag, without reading it.
    const tag = this.cache ? bodyTagOf(message) : undefined;
    const selector = tag === undefined ? '' : this.selector(profile, format);
    const slots = tag === undefined ? undefined : this.tagged(tag);
    const byTag = slotOf(slots, selector);
    if (byTag !== undefined) {
      this.hits++;
      return byTag;
    }
    const c = format.countable(message);
    // Keyed on what is counted (cheaper to hash than the message's JSON, and equal messages
    // in other wrappings share it); short texts are their own key.
    const text = c.text.length < 48 ? c.text : hash('sha1', c.text, 'base64');
    const key = this.cache ? this.key(`${profile.id}|${format.name}|${c.images},${c.documents},${c.audio}|`, text) : '';
    const cached = this.known(key);
    if (cached !== undefined) {
      this.hits++;
      if (tag !== undefined) this.cache?.set(tag, withSlot(slots, selector, cached));
      return cached;
    }
    this.misses++;
    const media = c.images * format.media.image + c.documents * format.media.document + c.audio * format.media.audio;
    const total = countText(profile, c.text) + media + format.framing.perMessage;
    // One entry per message: a tagged one is found by its tag from now on.
    if (tag === undefined) this.cache?.set(key, total);
    else this.cache?.set(tag, withSlot(slots, selector, total));
    return total;
  }

  /**
   * Tokens of the text at `slot` of a tagged message (`tag`), kept under the tag beside the
   * message's own count (`by-tag.ts`: found by the tag itself, no key joined and hashed); a part
   * past the second of a message (a tag keeps four selectors) or of an untagged one as
   * `countPartCached`.
   */
  countPartOfTag(profile: ModelProfile, format: FormatAdapter, tag: string | undefined, slot: number, text: string): number {
    if (!this.cache || tag === undefined || slot > 1 || text.length < 48) {
      return this.countPartCached(profile, tag === undefined ? undefined : `${tag}\0${format.name}\0${slot}`, text);
    }
    const selector = `${this.selector(profile, format)}|#${slot}`;
    const slots = this.tagged(tag);
    const known = slotOf(slots, selector);
    if (known !== undefined) {
      this.hits++;
      return known;
    }
    const n = this.countTextCached(profile, text);
    this.cache.set(tag, withSlot(slots, selector, n));
    return n;
  }

  /**
   * Tokens of a text taken from a tagged message (`named`: the message's tag and what selects the
   * text in it), found by that name without reading the text; untagged (`named` undefined), by the text.
   */
  private countPartCached(profile: ModelProfile, named: string | undefined, text: string): number {
    if (!this.cache || named === undefined || text.length < 48) return this.countTextCached(profile, text);
    const key = this.key(`${profile.id}|part#`, named);
    const cached = this.known(key);
    if (cached !== undefined) {
      this.hits++;
      return cached;
    }
    const n = this.countTextCached(profile, text);
    this.cache.set(key, n);
    return n;
  }

  /** Tokens of a text under a profile, through the same cache (a tool result counted again on a later call is a hit). */
  countTextCached(profile: ModelProfile, text: string): number {
    if (!this.cache || text.length === 0) return countText(profile, text);
    // Short texts are their own key (as in `countMessage`): tokenizing one costs more than the lookup.
    const key = this.key(`${profile.id}|text|`, text.length < 48 ? `=${text}` : hash('sha1', text, 'base64'));
    const cached = this.known(key);
    if (cached !== undefined) {
      this.hits++;
      return cached;
    }
    this.misses++;
    const n = countText(profile, text);
    this.cache.set(key, n);
    return n;
  }

  countMessages(format: FormatAdapter, profile: ModelProfile, messages: readonly unknown[]): number[] {
    return messages.map((m) => this.countMessage(format, profile, m));
  }

  /** Tokens of the top-level system instruction (0 when absent). */
  countSystem(format: FormatAdapter, profile: ModelProfile, system: unknown): number {
    if (system === undefined) return 0;
    checkDepth(system, 'system');
    // The same instructions and tools come with every call of an agent: counted once, then found.
    return this.countTextCached(profile, format.systemText(system)) + format.framing.perMessage;
  }

  /** Tokens of the tool definitions, counted as their JSON text (0 when absent). */
  countTools(profile: ModelProfile, tools: readonly unknown[] | undefined): number {
    if (!tools || tools.length === 0) return 0;
    checkDepth(tools, 'tools');
    return this.countTextCached(profile, JSON.stringify(tools));
  }

  stats(): CounterStats {
    return { hits: this.hits, misses: this.misses, entries: this.cache?.size ?? 0 };
  }
}
