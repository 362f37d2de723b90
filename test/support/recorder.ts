import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

/** One request as a client sent it to the recorder, and the `x-compactor` header its answer carried. */
export interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  status?: number;
  compactor?: string;
  /** Milliseconds from the request's body read to its answer's last byte written (a figure, never asserted). */
  ms?: number;
}

/**
 * A recording hop in front of a server: every request is kept (headers and body bytes, as the
 * client sent them) and forwarded unchanged, and the answer streamed back, its `x-compactor`
 * header noted. What a test compares with what the provider received from the proxy.
 */
export class Recorder {
  readonly sent: Sent[] = [];
  url = '';
  private server: Server | undefined;

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void (async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const read = performance.now();
        const entry: Sent = {
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks),
        };
        this.sent.push(entry);
        const { host: _host, connection: _c, 'content-length': _l, 'transfer-encoding': _t, ...headers } = req.headers;
        try {
          const answer = await request(`${this.target}${entry.url}`, {
            method: entry.method as 'POST',
            headers: headers as Record<string, string>,
            body: ['GET', 'HEAD'].includes(entry.method) ? null : entry.body,
          });
          entry.status = answer.statusCode;
          const marker = answer.headers['x-compactor'];
          if (typeof marker === 'string') entry.compactor = marker;
          const out: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(answer.headers))
            if (v !== undefined && !['connection', 'transfer-encoding', 'keep-alive'].includes(k)) out[k] = v;
          res.writeHead(answer.statusCode, out);
          for await (const chunk of answer.body) res.write(chunk);
          res.end();
          entry.ms = performance.now() - read;
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
