import { createHmac, hash } from 'node:crypto';
import { derived } from '../tokens/derived.js';

/** Where an original is stored and how it is checked: its artifact id and the SHA-256 of its JSON. */
export interface Address {
  /** `art_` + 24 hex digits, keyed by the installation secret and the caller's scope. */
  readonly id: string;
  /** SHA-256 (hex) of the content, reported to the caller. */
  readonly sha256: string;
}

/** Names content for one caller; the same content from the same caller always gets the same id. */
export interface Addresser {
  (json: string): Address;
  /** The address of content whose SHA-256 (hex) is already known (found by its content tag, not hashed again). */
  ofDigest(sha256: string): Address;
  /**
   * A name of this addresser's key (a digest of it: it tells nothing of the key): two addressers
   * with one name give every content the same id. What a cache of ids is keyed by, so that no
   * caller finds another's.
   */
  readonly keyName: string;
}

/** The scope of every caller when no API keys are configured: one tenant. */
export const SHARED_SCOPE = 'shared';

/** SHA-256 (hex) of a text (one-shot: no hash object per call). */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/**
 * Longest text whose keyed value (a MAC, a digest) is looked up in the derived-value cache rather
 * than computed. Looking up a fresh string hashes it in V8 (about 1.7 µs per 1,000 characters
 * here, with the key's concatenation and flattening), which is dearer than SHA-256 over it (about
 * 0.7 µs per 1,000, the native one-shot) past a few hundred characters: a longer text's value is
 * computed, a shorter one's found (an HMAC's fixed cost, about 1.4 µs, is what the cache saves).
 */
export const LOOKUP_MAX_CHARS = 1024;

/**
 * A short name of a derived key (the SHA-256 of it, 32 hex digits) for the derived-value cache's
 * keys: values under one key are never found under another, and the key itself is not kept there.
 */
export function keyTag(key: Buffer): string {
  return hash('sha256', key, 'hex').slice(0, 32);
}

/**
 * The scope a caller's artifacts and cached summaries live in: derived from its API key (given as
 * the key's SHA-256 digest, never the key itself) and the installation secret, so the stored scope
 * says nothing about the key; `shared` without a key.
 */
export function scopeOf(secret: string, keyDigest: Uint8Array | null | undefined): string {
  if (!keyDigest) return SHARED_SCOPE;
  return createHmac('sha256', secret).update('compactor-scope\0').update(keyDigest).digest('hex').slice(0, 32);
}

/**
 * Artifact ids for one scope: an HMAC of the content's SHA-256 under a key derived from the
 * installation secret and the scope. Nobody can derive an id from content alone (so a 200 against
 * a 404 confirms no guess about anyone's content), two callers never share an id, and the content
 * is hashed once whatever its size.
 */
export function addresser(secret: string, scope: string): Addresser {
  const key = createHmac('sha256', secret).update(`compactor-artifact-id\0${scope}`).digest();
  const tag = keyTag(key);
  // The content's SHA-256 computed (cheaper than finding it by the content); the id found again
  // for a digest named before (under this caller's key only).
  const ofDigest = (sha256: string): Address => {
    const id = derived.get(
      `id\0${tag}\0${sha256}`,
      () => `art_${createHmac('sha256', key).update(sha256).digest('hex').slice(0, 24)}`,
    );
    return { id, sha256 };
  };
  return Object.assign((json: string) => ofDigest(sha256Hex(json)), { ofDigest, keyName: tag });
}
