import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

/** The header the relay tags each forwarded request with, so the provider's record can be matched to the client's call. */
export const SEQ_HEADER = 'x-long-session-seq';

/** One request as the agent sent it, and what came back. Times are `Date.now()`. */
export interface RelayedCall {
  seq: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The request read whole, about to be forwarded. */
  forwardAt: number;
  /** The answer's headers arrived from the next hop. */
  headersAt?: number;
  /** The answer's last byte was passed on to the agent. */
  endAt?: number;
  status?: number;
  /** The answer's `x-compactor` header, when it had one. */
  compactor?: string;
  /** Its `x-compactor-tokens` header (`<before>-><after>`), when it had one. */
  compactorTokens?: string;
}

/**
 * A recording hop between the agent and the next server (Compactor, or the provider itself for
 * the straight ways): each request is kept as the agent sent it, tagged with `SEQ_HEADER` and
 * forwarded; the answer is streamed back as it comes, its `x-compactor` headers noted. The same
 * hop in front of both makes the straight relay's time the baseline of the proxy's.
 */
export class Relay {
  readonly calls: RelayedCall[] = [];
  url = '';
  private server: Server | undefined;

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void (async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const call: RelayedCall = {
          seq: this.calls.length,
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks),
          forwardAt: Date.now(),
        };
        this.calls.push(call);
        const { host: _h, connection: _c, 'content-length': _l, 'transfer-encoding': _t, ...headers } = req.headers;
        try {
          const answer = await request(`${this.target}${call.url}`, {
            method: call.method as 'POST',
            headers: { ...(headers as Record<string, string>), [SEQ_HEADER]: String(call.seq) },
            body: ['GET', 'HEAD'].includes(call.method) ? null : call.body,
            headersTimeout: 0,
            bodyTimeout: 0,
          });
          call.headersAt = Date.now();
          call.status = answer.statusCode;
          const marker = answer.headers['x-compactor'];
          if (typeof marker === 'string') call.compactor = marker;
          const tokens = answer.headers['x-compactor-tokens'];
          if (typeof tokens === 'string') call.compactorTokens = tokens;
          const out: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(answer.headers))
            if (v !== undefined && !['connection', 'transfer-encoding', 'keep-alive'].includes(k)) out[k] = v;
          res.writeHead(answer.statusCode, out);
          for await (const chunk of answer.body) res.write(chunk);
          res.end();
          call.endAt = Date.now();
        } catch {
          res.destroy();
        }
      })();
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
