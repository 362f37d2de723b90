import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Compactor's own `encrypted_content` for the `compaction` item it answers Codex's
 * `compaction_trigger` with: a sealed token naming the summary it stands for, signed under a key
 * derived from the installation secret and the caller's scope, the same key material as the
 * history markers (history/markers.ts) under a label of its own, so neither ever verifies as the
 * other. Not encrypted: it names an artifact id and a digest, nothing of the conversation. On later
 * requests `replaceSealed` puts the summary text back where the item was, so the provider never
 * sees a token it did not issue.
 */

/** What a sealed token claims. */
export interface SealClaims {
  /** The artifact holding the summarized range (what `recall`/`expand` give back), or null. */
  id: string | null;
  /** sha256 (hex, first 32 digits) of the exact text the item stands for (the answer's summary). */
  digest: string;
}

/** Seals and verifies one scope's tokens. */
export interface Sealer {
  seal(claims: SealClaims): string;
  /** The claims of a token sealed for this installation and scope, unedited; undefined for anything else. */
  verify(token: string): SealClaims | undefined;
}

/** Every token of ours starts with this (a cheap test before any MAC). */
export const SEAL_PREFIX = 'cmpx1.';
/** No token of ours is longer: a longer value is not read at all. */
const MAX_TOKEN = 512;
const ID = /^art_[0-9a-f]{24}$/;
const DIGEST = /^[0-9a-f]{32}$/;

/** The digest a seal names for a text. */
export function textDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

function claimsOf(raw: string): SealClaims | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    const { id, digest } = value as Record<string, unknown>;
    if (!(id === null || (typeof id === 'string' && ID.test(id)))) return undefined;
    if (typeof digest !== 'string' || !DIGEST.test(digest)) return undefined;
    return { id, digest };
  } catch {
    return undefined;
  }
}

/**
 * The sealer of one scope (the tenant), keyed by the installation secret: the same secret, scope
 * and claims always give the same token; a token sealed for another scope or installation, or
 * edited in any byte, does not verify. Never throws.
 */
export function sealer(secret: string, scope: string): Sealer {
  const key = createHmac('sha256', secret).update(`compactor-seal\0${scope}`).digest();
  const mac = (payload: string) => createHmac('sha256', key).update(payload).digest('base64url');
  return {
    seal(claims) {
      const payload = Buffer.from(JSON.stringify({ id: claims.id, digest: claims.digest })).toString('base64url');
      return `${SEAL_PREFIX}${payload}.${mac(payload)}`;
    },
    verify(token) {
      if (!token.startsWith(SEAL_PREFIX) || token.length > MAX_TOKEN) return undefined;
      const rest = token.slice(SEAL_PREFIX.length);
      const dot = rest.indexOf('.');
      if (dot < 0) return undefined;
      const payload = rest.slice(0, dot);
      const given = Buffer.from(rest.slice(dot + 1));
      const expected = Buffer.from(mac(payload));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return claimsOf(payload);
    },
  };
}

/** Finds the text a verified token stands for (the wiring's store); undefined when it is gone. */
export type SealedTextLoader = (claims: SealClaims) => Promise<string | undefined>;

/** What `replaceSealed` did. */
export interface SealedReplacement {
  /** The body to forward: the same object when nothing was replaced. */
  body: unknown;
  /** Items of ours replaced by their summary text. */
  replaced: number;
  /** Items of ours whose text was gone (replaced by a notice naming the artifact). */
  missing: number;
  /** `compaction` items left as sent: not ours, or not verifying (another tenant or installation, edited). */
  leftAsSent: number;
}

/** The user message a sealed item becomes, as Codex writes its own local compaction's summary. */
export function summaryMessage(text: string): Record<string, unknown> {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

/** What stands for a summary whose text is gone: where the original range is. */
export function missingSummaryText(id: string | null): string {
  return id
    ? `An earlier part of this conversation was summarized by Compactor; the summary is no longer held. The original messages are artifact ${id} (Compactor's \`recall\` tool gives them back).`
    : 'An earlier part of this conversation was summarized by Compactor; the summary is no longer held.';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A Responses body with every `compaction` item whose `encrypted_content` is a token of ours that
 * verifies replaced by the summary text it stands for (a user message); when that text is gone or
 * no longer matches the token's digest, by a notice naming the artifact. Items that do not verify
 * (the provider's own, another tenant's, another installation's, edited) are left as sent. The body
 * is not mutated; one pass over `input`.
 */
export async function replaceSealed(
  body: unknown,
  verify: (token: string) => SealClaims | undefined,
  load: SealedTextLoader,
): Promise<SealedReplacement> {
  const none = { body, replaced: 0, missing: 0, leftAsSent: 0 };
  if (!isRecord(body) || !Array.isArray(body.input)) return none;
  let replaced = 0;
  let missing = 0;
  let leftAsSent = 0;
  const input: unknown[] = [];
  for (const item of body.input) {
    if (!isRecord(item) || item.type !== 'compaction') {
      input.push(item);
      continue;
    }
    const token = item.encrypted_content;
    const claims = typeof token === 'string' ? verify(token) : undefined;
    if (!claims) {
      leftAsSent++;
      input.push(item);
      continue;
    }
    const text = await load(claims);
    if (text !== undefined && textDigest(text) === claims.digest) {
      replaced++;
      input.push(summaryMessage(text));
    } else {
      missing++;
      input.push(summaryMessage(missingSummaryText(claims.id)));
    }
  }
  if (replaced + missing === 0) return { ...none, leftAsSent };
  return { body: { ...body, input }, replaced, missing, leftAsSent };
}
