import type { IncomingHttpHeaders } from 'node:http';
import type { Provider } from './providers.js';

/**
 * What crosses the proxy in headers: every request header goes upstream as it came (credentials,
 * `anthropic-version`, `anthropic-beta`, `OpenAI-Organization`, `x-stainless-*`, session ids) but
 * the hop-by-hop ones and Compactor's own (`x-compactor-*`); every response header comes back but
 * the hop-by-hop ones. Header values never reach a log line.
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1), and those the HTTP client sets itself for the new connection. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'expect',
  'content-length',
]);

/** Headers named by `Connection` are hop-by-hop too. */
function connectionNamed(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  const named = new Set<string>();
  for (const v of [value ?? []].flat()) for (const name of v.split(',')) if (name.trim()) named.add(name.trim().toLowerCase());
  return named;
}

/** The request headers to send upstream (`x-compactor-*`, hop-by-hop ones and `dropped` removed); `set` overrides. */
export function upstreamRequestHeaders(
  headers: IncomingHttpHeaders,
  set: Readonly<Record<string, string>> = {},
  dropped: readonly string[] = [],
): Record<string, string | string[]> {
  const named = connectionNamed(headers);
  for (const name of dropped) named.add(name);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name) || name.startsWith('x-compactor-')) continue;
    out[name] = value;
  }
  for (const [name, value] of Object.entries(set)) out[name] = value;
  return out;
}

/** Response headers as the HTTP client gives them, without the hop-by-hop ones (the body's length stays). */
export function clientResponseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const named = connectionNamed(headers as IncomingHttpHeaders);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || named.has(lower)) continue;
    if (HOP_BY_HOP.has(lower) && lower !== 'content-length') continue;
    out[lower] = value;
  }
  return out;
}

/** A header's single value (the first, when repeated). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The provider credential a request carries (an API key or an OAuth bearer), whichever header of
 * the provider's holds one, else its query parameter. Only ever hashed, never stored or logged.
 */
export function credentialOf(provider: Provider, headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  for (const name of provider.credentialHeaders) {
    const value = headerValue(headers, name);
    if (value) return value.replace(/^Bearer\s+/i, '');
  }
  const key = provider.credentialQuery ? query.get(provider.credentialQuery) : null;
  return key ?? undefined;
}
