import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The one API-key check, used by `/v1` (the guard), the proxy (`x-compactor-key`) and `/mcp`:
 * keys are compared as SHA-256 digests (so lengths leak nothing), with every configured key,
 * always (the time taken says nothing about which one matched).
 */

/** The SHA-256 digest of a text (a key, or a provider credential). */
export const digestOf = (text: string): Buffer => createHash('sha256').update(text).digest();

export interface KeyCheck {
  /** Whether keys are configured (none: the service is open, bound to localhost). */
  readonly on: boolean;
  /** The digest of `given` when it is one of the keys, else null. */
  check(given: string | undefined): Buffer | null;
}

/** The check against the configured keys (`COMPACTOR_API_KEYS`). */
export function keyCheck(keys: readonly string[] | undefined): KeyCheck {
  const digests = (keys ?? []).map(digestOf);
  return {
    on: digests.length > 0,
    check(given) {
      if (!given) return null;
      const d = digestOf(given);
      let ok = false;
      for (const key of digests) ok = timingSafeEqual(d, key) || ok;
      return ok ? d : null;
    },
  };
}

/** The key of an `Authorization: Bearer <key>` header, if it holds one. */
export function bearerOf(header: unknown): string | undefined {
  const match = typeof header === 'string' ? /^Bearer[ \t]+([^ \t].*)$/i.exec(header) : null;
  return match?.[1]?.trim() || undefined;
}
