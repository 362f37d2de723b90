import { z } from 'zod';

/* The shapes an environment value may take, as the configuration schema (`config.ts`) checks them. */

/**
 * A whole number in decimal digits between `min` and `max`. Nothing else is a number here: not
 * hex (`0x10`), octal or binary literals, an exponent (`1e3`), a sign, a fraction or spaces, all
 * of which `Number()` would read as something the operator may not have meant.
 */
export const intFromEnv = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'expected a whole number in decimal digits (no hex, sign, exponent, fraction or spaces)')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** `auto`, or a whole number in decimal digits between `min` and `max` (as `intFromEnv`). */
export const autoOrIntFromEnv = (min: number, max: number) =>
  z
    .string()
    .regex(/^(auto|\d+)$/, 'expected auto, or a whole number in decimal digits (no hex, sign, exponent, fraction or spaces)')
    .transform((v) => (v === 'auto' ? ('auto' as const) : Number(v)))
    .pipe(z.union([z.literal('auto'), z.number().int().min(min).max(max)]));

/** The first part of Redis keys: letters, digits, `_ . - { }` (braces for a Redis Cluster hash tag). */
export const redisPrefix = z.string().regex(/^[\w{}.-]{1,64}$/, 'expected 1 to 64 letters, digits, _ . - { }');

/** An upstream base: an http(s) URL without credentials, query or fragment, or `off`. */
export const upstream = z
  .string()
  .refine((v) => v === 'off' || validUpstream(v), 'expected an http:// or https:// URL (no user, query or fragment), or off');

function validUpstream(value: string): boolean {
  try {
    const url = new URL(value);
    return /^https?:$/.test(url.protocol) && url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** A DNS name (letters, digits, `-`, dot-separated labels), or `.name` for its subdomains. */
export const HOST_NAME = /^\.?[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$/;

/** Whether a `redis://` or `rediss://` URL is one ioredis can use: a host, and a numeric database if any. */
export function validRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.hostname.length > 0 && /^(\/\d*)?$/.test(url.pathname);
  } catch {
    return false;
  }
}
