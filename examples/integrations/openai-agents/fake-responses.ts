/**
 * A fake OpenAI Responses API (`POST /v1/responses`, plain JSON or server-sent events) on
 * node:http, for tests: it answers from a script, one step per request, and records every request
 * and answer. Its `usage` is realistic in shape: `input_tokens` estimated from the request's size,
 * `input_tokens_details.cached_tokens` the prefix shared with the previous request (whole 128-token
 * blocks from 1,024 on, as OpenAI caches).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

/** One scripted reply: its output items (ids, statuses and annotations are filled in). */
export type Step = (request: Json) => Json[];

export interface Exchange {
  request: Json;
  response: Json;
}

export interface FakeResponses {
  url: string;
  exchanges: Exchange[];
  /** Starts the script again (a new run). */
  reset(): void;
  close(): Promise<void>;
}

const tokens = (value: unknown): number => Math.ceil(JSON.stringify(value ?? '').length / 4);

function cachedTokens(previous: Json | undefined, request: Json): number {
  if (!previous) return 0;
  const before = (previous.input as unknown[]) ?? [];
  const now = (request.input as unknown[]) ?? [];
  let shared = 0;
  while (shared < before.length && shared < now.length && JSON.stringify(before[shared]) === JSON.stringify(now[shared]))
    shared++;
  const prefix = tokens(request.instructions) + tokens(request.tools) + tokens(now.slice(0, shared));
  return prefix < 1024 ? 0 : Math.floor(prefix / 128) * 128;
}

function complete(item: Json, n: number, k: number): Json {
  const id = `${String(item.type).slice(0, 2)}_${n}_${k}`;
  if (item.type === 'message') {
    const content = (item.content as Json[]).map((part) => ({ annotations: [], logprobs: [], ...part }));
    return { id, status: 'completed', role: 'assistant', ...item, content };
  }
  if (item.type === 'function_call') return { id, status: 'completed', ...item };
  return { id, ...item };
}

export async function startFakeResponses(script: Step[]): Promise<FakeResponses> {
  const exchanges: Exchange[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    const n = exchanges.length;
    const step = script[Math.min(n, script.length - 1)] as Step;
    const output = step(request).map((item, k) => complete(item, n, k));
    const input = tokens(request.instructions) + tokens(request.tools) + tokens(request.input);
    const outputTokens = tokens(output);
    const usage = {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cachedTokens(exchanges.at(-1)?.request, request) },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: output.some((o) => o.type === 'reasoning') ? 64 : 0 },
      total_tokens: input + outputTokens,
    };
    const response: Json = {
      id: `resp_${exchanges.length}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: request.model,
      output,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: request.tools ?? [],
      usage,
    };
    exchanges.push({ request, response });
    if (!request.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${exchanges.length}` });
      res.end(JSON.stringify(response));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let seq = 0;
    const send = (type: string, data: Json) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
    send('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } });
    output.forEach((item, index) => {
      send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress' } });
      if (item.type === 'message') {
        const text = (item.content as Json[]).map((p) => p.text).join('');
        send('response.output_text.delta', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          delta: text,
          logprobs: [],
        });
      }
      send('response.output_item.done', { output_index: index, item });
    });
    send('response.completed', { response });
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    exchanges,
    reset: () => {
      exchanges.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
