import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import * as zlib from 'node:zlib';
import { asObject, cacheParts, readRequest, route } from './provider/parse.js';
import { PrefixCache, promptSegments, tokensOf } from './provider/prefix-cache.js';
import { toolSteps } from './provider/scenario.js';
import { textLength } from './provider/text.js';
import type { Fault, JsonValue, ModelRequest, RecordedRequest, Reply, Scenario, UsageFigures, Wire } from './provider/types.js';
import type { Answer, StreamEvent, WireEncoder } from './provider/wire.js';
import { anthropicWire } from './provider/wire-anthropic.js';
import { geminiWire } from './provider/wire-gemini.js';
import { chatWire, responsesWire } from './provider/wire-openai.js';

export { redactHeaders, redactSecrets, redactUrl } from './provider/redact.js';
export {
  type RecallState,
  recallSteps,
  rememberedSteps,
  shellArguments,
  shellTool,
  type ToolStepsOptions,
  toolSteps,
} from './provider/scenario.js';
export type * from './provider/types.js';

const ENCODERS: Record<Wire, WireEncoder> = {
  anthropic: anthropicWire,
  'openai-responses': responsesWire,
  'openai-chat': chatWire,
  gemini: geminiWire,
};

/** Options of a fake provider. */
export interface FakeProviderOptions {
  /** Decides each model request's reply when none is queued (default `toolSteps()`). */
  scenario?: Scenario;
}

/** Undoes a request's `content-encoding` (gzip, deflate, br, and zstd where this Node has it). */
function decode(raw: Buffer, encoding: string | undefined): Buffer {
  if (!encoding || encoding === 'identity') return raw;
  if (encoding === 'gzip') return zlib.gunzipSync(raw);
  if (encoding === 'deflate') return zlib.inflateSync(raw);
  if (encoding === 'br') return zlib.brotliDecompressSync(raw);
  const zstd = (zlib as { zstdDecompressSync?: (b: Buffer) => Buffer }).zstdDecompressSync;
  if (encoding === 'zstd' && zstd) return zstd(raw);
  throw new Error(`unsupported content-encoding ${encoding}`);
}

function parseJson(bytes: Buffer): JsonValue | undefined {
  try {
    return JSON.parse(bytes.toString('utf8')) as JsonValue;
  } catch {
    return undefined;
  }
}

/** Resolves when the response can take more bytes, or when it closed. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Waits `ms`, or less when the response closes first (a client or a proxy that gave up): no timer outlives its answer. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on('close', done);
  });
}

/**
 * A fake model provider speaking real HTTP on 127.0.0.1: the Anthropic Messages API (with
 * `count_tokens`), OpenAI Responses and Chat Completions, and Gemini `generateContent` /
 * `streamGenerateContent`, streaming and not. Queued replies answer first (`enqueue`), then the
 * scenario (default: a few shell tool calls with large outputs, then a text answer). Usage is
 * counted (characters / 4) with a simulated prompt cache per conversation (`cache`). Every request
 * is recorded (`requests`), with its headers (credentials included: print them only through
 * `redactHeaders`), raw body, parsed JSON and timing.
 */
export class FakeProvider {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** The simulated prompt cache. */
  readonly cache = new PrefixCache();
  scenario: Scenario;
  /** `http://127.0.0.1:<port>` once started: the root the APIs' paths (`/v1/…`, `/v1beta/…`) hang from. */
  url = '';
  private readonly queue: Reply[] = [];
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;

  constructor(options: FakeProviderOptions = {}) {
    this.scenario = options.scenario ?? toolSteps();
  }

  /** Queues replies for the next model requests, ahead of the scenario. */
  enqueue(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** The recorded model calls (not token counts or unknown paths), from record position `since` on. */
  modelRequests(since = 0): RecordedRequest[] {
    return this.requests.slice(since).filter((r) => r.endpoint === 'model');
  }

  /** Listens on a free port of 127.0.0.1. */
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
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Closes every connection (stalled answers included) and the server. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const start = performance.now();
    const receivedAt = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    const r = route(req.method ?? 'GET', url.pathname, url.searchParams);
    let json: JsonValue | undefined;
    try {
      json = parseJson(decode(raw, req.headers['content-encoding']));
    } catch {
      json = undefined;
    }
    const record: RecordedRequest = {
      seq: this.requests.length,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      path: url.pathname,
      headers: req.headers,
      raw,
      json,
      wire: r?.wire,
      endpoint: r?.endpoint ?? 'other',
      receivedAt,
      timing: { bodyMs: performance.now() - start },
    };
    this.requests.push(record);
    res.on('finish', () => {
      record.timing.finishMs = performance.now() - start;
    });
    res.on('close', () => {
      record.timing.endMs = performance.now() - start;
    });
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
      record.timing.headersMs = performance.now() - start;
    };
    if (!r) {
      send(404, { error: { message: `no route for ${record.method} ${url.pathname}`, type: 'not_found_error', code: 404 } });
      return;
    }
    const encoder = ENCODERS[r.wire];
    const body = asObject(json);
    if (!body) {
      send(400, encoder.error(400, 'the request body is not a JSON object'));
      return;
    }
    const request = readRequest(record.seq, r, body, req.headers, record.url);
    const parts = cacheParts(r.wire, body);
    const segments = promptSegments(parts.tools, parts.system, parts.history);
    const promptTokens = tokensOf(segments.reduce((n, s) => n + s.length, 0));
    if (r.endpoint === 'count_tokens') {
      send(200, encoder.countTokens(promptTokens));
      return;
    }
    const reply = this.queue.shift() ?? (await this.scenario(request));
    if (reply.delayMs) await pause(res, reply.delayMs);
    if (res.destroyed) return;
    const requestId = { [encoder.requestIdHeader]: `req_fake_${record.seq}` };
    if (reply.fault?.kind === 'status') {
      const { status, retryAfter, message } = reply.fault;
      const headers: Record<string, string> = { ...requestId };
      if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      send(status, encoder.error(status, message ?? 'scripted failure'), headers);
      return;
    }
    record.cache = this.cache.observe(request.conversation, segments);
    record.usage = usageFor(request, reply, promptTokens, Math.floor(record.cache.commonChars / 4));
    const answer = answerFor(request, reply, record.usage);
    if (!request.stream) {
      send(200, encoder.json(answer, request), requestId);
      return;
    }
    const form = r.geminiStream ?? 'sse';
    record.status = 200;
    res.writeHead(200, {
      'content-type': form === 'array' ? 'application/json' : 'text/event-stream',
      'cache-control': 'no-cache',
      ...requestId,
    });
    record.timing.headersMs = performance.now() - start;
    await writeStream(res, encoder.stream(answer, request, form), reply.fault);
  }
}

function usageFor(request: ModelRequest, reply: Reply, input: number, cacheRead: number): UsageFigures {
  const calls = JSON.stringify(reply.toolCalls ?? []);
  const output = tokensOf((reply.text === undefined ? 0 : textLength(reply.text)) + (reply.toolCalls ? calls.length : 0));
  const read = Math.min(input, Math.max(0, cacheRead));
  // Anthropic writes the cache only where the request marks a breakpoint; the others cache implicitly.
  const marked = request.wire === 'anthropic' && JSON.stringify(request.body).includes('"cache_control"');
  return { input, output, cacheRead: read, cacheWrite: marked ? input - read : 0, ...reply.usage };
}

function answerFor(request: ModelRequest, reply: Reply, usage: UsageFigures): Answer {
  const prefix = request.wire === 'anthropic' ? 'toolu_fake' : 'call_fake';
  return {
    id: `fake_${request.seq}`,
    model: request.model,
    text: reply.text,
    toolCalls: (reply.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `${prefix}${request.seq}_${i}`,
      name: call.name,
      ...(call.namespace ? { namespace: call.namespace } : {}),
      input: call.input,
      custom: request.tools.some((t) => t.name === call.name && t.kind === 'custom'),
      search: request.wire === 'openai-responses' && request.tools.some((t) => t.name === call.name && t.kind === 'tool_search'),
    })),
    usage,
    ...(reply.compaction !== undefined ? { compaction: reply.compaction } : {}),
  };
}

/** Writes a stream's events with backpressure, applying a stall or reset fault after its count of events. */
async function writeStream(res: ServerResponse, events: Iterable<StreamEvent>, fault: Fault | undefined): Promise<void> {
  const stopAt = fault && fault.kind !== 'status' ? fault.afterEvents : Number.POSITIVE_INFINITY;
  let written = 0;
  const interrupt = async () => {
    // A stall leaves the answer open until the client or stop() closes it. A reset first lets
    // what was written reach the client (destroying drops what the socket still holds), then
    // sends a TCP reset.
    if (fault?.kind !== 'reset') return;
    const socket = res.socket;
    if (!socket) return;
    for (let i = 0; i < 400 && socket.writableLength > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    socket.resetAndDestroy();
  };
  for (const event of events) {
    if (written >= stopAt) return interrupt();
    for (const piece of typeof event === 'string' ? [event] : event) {
      if (res.destroyed) return;
      if (!res.write(piece)) await drained(res);
    }
    written++;
  }
  if (written >= stopAt) return interrupt();
  res.end();
}
