import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One call the summarizer answered: when it arrived and when its answer was written (`Date.now()`). */
export interface SummarizerCall {
  start: number;
  end?: number;
  promptChars: number;
  outputChars: number;
}

/** Options of the slow summarizer. */
export interface SlowSummarizerOptions {
  /** How long each call takes before it answers (default 1,500 ms). */
  delayMs?: number;
  /** Characters of each summary (default 8,000: about 2,000 tokens), at most 4 per token of `max_tokens`, as a model writes. */
  chars?: number;
}

function summaryText(chars: number, calls: number): string {
  let text = `## Goal and constraints\nSummary ${calls}: the listings run so far, module by module.\n`;
  for (let i = 1; text.length < chars; i++)
    text += `- module ${i}: handlers exported one per file; signature handle(input: Invoice): Result.\n`;
  return text.slice(0, chars);
}

/**
 * An OpenAI-compatible summarizer that takes its time: `POST …/chat/completions` answered after
 * `delayMs` with a summary of about `chars` characters (JSON, or SSE when asked), usage counted
 * as characters / 4. Every call's interval is recorded (`calls`), so a test can tell whether a
 * model request was held while a summary was being written.
 */
export class SlowSummarizer {
  readonly calls: SummarizerCall[] = [];
  /** `http://127.0.0.1:<port>/v1` once started: what `OPENAI_BASE_URL` takes. */
  url = '';
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;

  constructor(private readonly options: SlowSummarizerOptions = {}) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
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
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Whether a summarizer call was running at any moment of `[from, to]`. */
  runningDuring(from: number, to: number): boolean {
    return this.calls.some((c) => c.start <= to && (c.end ?? Number.POSITIVE_INFINITY) >= from);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const call: SummarizerCall = { start: Date.now(), promptChars: 0, outputChars: 0 };
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    this.calls.push(call);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      model?: string;
      stream?: boolean;
      max_tokens?: number;
      messages?: { content?: unknown }[];
    };
    call.promptChars = (body.messages ?? []).reduce((n, m) => n + String(m.content ?? '').length, 0);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.options.delayMs ?? 1500);
      res.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (res.destroyed) return;
    const want = this.options.chars ?? 8000;
    const content = summaryText(Math.min(want, (body.max_tokens ?? want) * 4), this.calls.length);
    call.outputChars = content.length;
    const usage = { prompt_tokens: Math.ceil(call.promptChars / 4), completion_tokens: Math.ceil(content.length / 4) };
    const base = { id: `chatcmpl-slow-${this.calls.length}`, created: 1, model: body.model ?? 'fake-summarizer' };
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const delta = { role: 'assistant', content };
      res.write(
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
      );
      res.write(
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    } else {
      const message = { role: 'assistant', content };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }], usage }),
      );
    }
    call.end = Date.now();
  }
}
