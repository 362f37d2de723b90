import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { CompactorError } from '../../errors.js';

/**
 * The host name of a `Host` header, lower-cased, without its port or a trailing dot; an IPv6
 * literal keeps its brackets off (`[::1]:8080` → `::1`).
 */
export function hostName(header: string): string {
  const host = header.trim().toLowerCase();
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']') >>> 0);
  const colon = host.lastIndexOf(':');
  return (colon < 0 ? host : host.slice(0, colon)).replace(/\.$/, '');
}

/**
 * Whether a request naming `header` as its `Host` is one for this service. DNS rebinding points an
 * attacker's name at 127.0.0.1 so that a browser's page may call a service without keys there, but
 * the browser still sends the attacker's name as `Host`: so an IP address (the browser's origin is
 * then that address), `localhost` or another one-label name (a container's or a compose service's,
 * not delegated by public DNS), the bound address, and the configured names are served, and
 * other DNS names are not. `.example.com` allows its subdomains; `*` allows any. A request
 * without `Host` (HTTP/1.0; HTTP/1.1 requires it, `missingHost`) is no browser's.
 */
export function hostAllowed(header: string | undefined, allowed: readonly string[]): boolean {
  if (header === undefined) return true;
  const name = hostName(header);
  if (isIP(name) !== 0 || (name !== '' && !name.includes('.')) || name.endsWith('.localhost')) return true;
  return allowed.some((a) => a === '*' || a === name || (a.startsWith('.') && name.endsWith(a)));
}

/**
 * An `onRequest` hook answering 421 `CMP_ERR_REQUEST_HOST_NOT_ALLOWED` for a request whose `Host`
 * `hostAllowed` refuses, on every route (health, metrics, docs, the proxy and /mcp too).
 */
export function hostCheck(allowed: readonly string[]) {
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.host;
    if (hostAllowed(header, allowed)) return;
    throw new CompactorError(
      'CMP_ERR_REQUEST_HOST_NOT_ALLOWED',
      `Host ${JSON.stringify(String(header).slice(0, 100))} is not a name this service answers for: it answers IP addresses, localhost and other one-label names, and the names in COMPACTOR_ALLOWED_HOSTS (a defence against DNS rebinding)`,
      [{ path: 'headers.host', message: 'not an allowed host name (COMPACTOR_ALLOWED_HOSTS)' }],
    );
  };
}
