import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { countO200k } from './tokenizer.js';

/** One scripted answer. Without `fault`, a normal completion (streamed when the request asks). */
export interface Reply {
  content?: string;
  /** Usage to report; default: the prompt and the content counted with o200k_base. */
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Wait this long before answering (past the client's timeout to simulate a slow server). */
  delayMs?: number;
  /**
   * Answer only once this settles: a reply held until the test says so (`gate()`), so that no test
   * depends on a delay being long enough on a busy machine. A client that gave up is not answered.
   */
  until?: Promise<unknown>;
  fault?: 'status' | 'malformed' | 'reset';
  /** For `status`: the HTTP status (429, 500, …) and an optional retry-after in seconds. */
  status?: number;
  retryAfter?: number;
}

export interface RecordedRequest {
  model: string;
  messages: { role: string; content: string }[];
  max_tokens?: number;
  stream?: boolean;
  /** Tokens of every message's content, as the real tokenizer counts them. */
  promptTokens: number;
}

/**
 * A fake OpenAI-compatible server speaking real HTTP on a local port: `/v1/chat/completions`
 * with and without streaming, scripted replies and usage, and faults on demand (slow replies,
 * statuses with retry-after, malformed JSON, empty content, connection resets). Replies are
 * taken in order; when the script runs out, `fallback` answers (default: a summary that echoes
 * the size of its input).
 */
export class FakeOpenAI {
  readonly requests: RecordedRequest[] = [];
  private readonly script: Reply[] = [];
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  fallback: (req: RecordedRequest) => Reply = (req) => ({
    content: `## Goal and constraints\nSummary of ${req.messages.length} messages (${req.promptTokens} tokens in).`,
  });
  url = '';

  /** Queues replies for the next calls. */
  enqueue(...replies: Reply[]): this {
    this.script.push(...replies);
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req, res);
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<RecordedRequest, 'promptTokens'>;
    const recorded: RecordedRequest = {
      ...body,
      promptTokens: body.messages.reduce((n, m) => n + countO200k(m.content), 0),
    };
    this.requests.push(recorded);
    const reply = this.script.shift() ?? this.fallback(recorded);
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.until) await reply.until.catch(() => {});
    if (res.destroyed) return;
    if (reply.fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (reply.fault === 'status') {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
      res
        .writeHead(reply.status ?? 500, headers)
        .end(JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }));
      return;
    }
    if (reply.fault === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id": "chatcmpl-1", "choices": [ {');
      return;
    }
    const content = reply.content ?? '';
    const usage = reply.usage ?? {
      prompt_tokens: recorded.promptTokens,
      completion_tokens: countO200k(content),
    };
    const usageBody = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
      prompt_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
    };
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const frame = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: body.model };
      for (const piece of content.match(/[\s\S]{1,16}/g) ?? []) {
        frame({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
      }
      frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: usageBody });
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: usageBody,
      }),
    );
  }
}

/**
 * A promise the test settles (`open`) when it has done what a held reply must wait for; opened at
 * the latest when the test ends, so that nothing is left waiting.
 */
export function gate(t: { teardown(fn: () => void): void }): { until: Promise<void>; open: () => void } {
  let open = (): void => {};
  const until = new Promise<void>((resolve) => {
    open = resolve;
  });
  t.teardown(() => open());
  return { until, open };
}
