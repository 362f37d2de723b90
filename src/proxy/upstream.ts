import type { Readable } from 'node:stream';
import type { ProviderName } from './providers.js';
import { Agent, errors, request } from './undici.js';

/**
 * The proxy's HTTP client: undici, one keep-alive pool per upstream origin, timeouts set (never
 * the library's defaults), an abort signal per request so that a client that disconnects ends its
 * upstream request. Where a provider's upstream is is configuration only: no request, header or
 * body ever chooses where the proxy connects.
 */

export interface UpstreamOptions {
  /** Each provider's base URL, or undefined: that provider is off (404). */
  readonly bases: Readonly<Record<ProviderName, string | undefined>>;
  /** How long to wait for the upstream's headers, and between two chunks of its body. */
  readonly timeoutMs: number;
  /** How long to wait for a connection. */
  readonly connectTimeoutMs: number;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Readable;
}

/** Why the upstream could not be reached: what the client's 502 says (no address, no content). */
export class UpstreamUnreachable extends Error {
  constructor(readonly kind: 'timeout' | 'connect' | 'reset') {
    super(`upstream ${kind}`);
  }
}

export class Upstreams {
  private readonly agent: Agent;

  constructor(private readonly options: UpstreamOptions) {
    this.agent = new Agent({
      connectTimeout: options.connectTimeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 30_000,
      // Streams of hours are the client's to end; a pool needs no pipelining for them.
      pipelining: 1,
    });
  }

  /** The provider's base URL, or undefined when it is off. */
  base(provider: ProviderName): string | undefined {
    return this.options.bases[provider];
  }

  /**
   * The upstream URL of a request: the provider's base with the request's path (after the prefix)
   * and query appended. The path is the client's; the origin never is, and neither is anything
   * outside the base's path: the joined path is normalised as the upstream would (`..`, `%2e%2e`,
   * `.%2e`, backslashes) and undefined when it leaves the base.
   */
  url(provider: ProviderName, pathAndQuery: string): URL | undefined {
    const base = this.options.bases[provider];
    if (!base) return undefined;
    const root = new URL(base);
    const joined = new URL(root.toString());
    const [path, query] = splitOnce(pathAndQuery, '?');
    joined.pathname = `${root.pathname.replace(/\/$/, '')}${path.startsWith('/') ? path : `/${path}`}`;
    joined.search = query === undefined ? '' : `?${query}`;
    // The path cannot move the request to another origin (URL resolution kept the base's), nor out of the base's path.
    const within = root.pathname.replace(/\/$/, '');
    const confined = joined.pathname === within || joined.pathname.startsWith(`${within}/`);
    return joined.origin === root.origin && confined && !leavesBase(path) ? joined : undefined;
  }

  async send(
    url: URL,
    method: string,
    headers: Record<string, string | string[]>,
    body: Buffer | Readable | undefined,
    signal: AbortSignal,
  ): Promise<UpstreamAnswer> {
    try {
      const answer = await request(url, {
        method: method as 'POST',
        headers,
        body: body ?? null,
        signal,
        dispatcher: this.agent,
      });
      return { status: answer.statusCode, headers: answer.headers, body: answer.body };
    } catch (error) {
      throw unreachable(error);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/**
 * Whether a path climbs out of where it starts: a `..` segment (however spelt: `%2e`, `\\`)
 * reaching above its root. WHATWG URL resolution already clamps at the origin's root, so this
 * is what keeps a base with a path (`http://host/base/openai`) from being left.
 */
function leavesBase(path: string): boolean {
  let depth = 0;
  for (const segment of path.replace(/\\/g, '/').split('/')) {
    const decoded = segment.replace(/%2e/gi, '.');
    if (decoded === '..') depth--;
    else if (decoded !== '.' && decoded !== '') depth++;
    if (depth < 0) return true;
  }
  return false;
}

function splitOnce(text: string, sep: string): [string, string | undefined] {
  const i = text.indexOf(sep);
  return i < 0 ? [text, undefined] : [text.slice(0, i), text.slice(i + 1)];
}

/** An undici failure as the client's 502 names it; an abort (the client left) is passed on as it is. */
function unreachable(error: unknown): Error {
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError)
    return new UpstreamUnreachable('timeout');
  if (error instanceof errors.ConnectTimeoutError) return new UpstreamUnreachable('timeout');
  if (error instanceof errors.RequestAbortedError || (error as Error)?.name === 'AbortError') return error as Error;
  if (error instanceof errors.SocketError) return new UpstreamUnreachable('reset');
  return new UpstreamUnreachable('connect');
}
