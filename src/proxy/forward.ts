import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../service/artifacts.js';
import { saveUsage } from './conversation.js';
import { clientResponseHeaders, headerValue, upstreamRequestHeaders } from './headers.js';
import type { ProxyMetrics } from './metrics.js';
import { type CallOutcome, outcomeHeaders } from './outcome.js';
import type { Provider } from './providers.js';
import type { Reduction } from './reduce.js';
import { type UpstreamAnswer, type Upstreams, UpstreamUnreachable } from './upstream.js';
import { UsageTap } from './usage-tap.js';
import { ERROR_READ_MAX, windowFromError } from './window.js';

/** What the forwarder needs of the proxy: where to send, what to count, how to keep what the answer said. */
export interface ForwardContext {
  readonly upstreams: Upstreams;
  readonly metrics: ProxyMetrics;
  readonly log: { warn(obj: Record<string, unknown>, msg: string): void };
  /** Stores a conversation record without holding the request (bounded, its failure logged). */
  remember(write: () => Promise<void>): void;
  readonly artifacts: Parameters<typeof saveUsage>[0];
}

/** One request to forward, as the handler leaves it. */
export interface Forwarding {
  readonly ctx: ForwardContext;
  readonly provider: Provider;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly target: URL;
  /** The body to send: the client's stream, its bytes as read, or the reduced body; none for GET and HEAD. */
  readonly body: Buffer | Readable | undefined;
  /** Whether it is a model call (its answer is asked for uncompressed, to be read for its usage). */
  readonly modelCall: boolean;
  /** Request headers not to forward (an `authorization` holding Compactor's own key). */
  readonly dropped?: readonly string[];
  readonly call: CallOutcome;
  /** The reduction whose answer's usage is kept for the conversation's next call (not for a count). */
  readonly usageFor?: { readonly reduction: Reduction; readonly owner: Caller } | undefined;
  /** Told the answer's usage as the provider reported it (the conversation record prices the call with it). */
  readonly onUsage?: ((usage: Record<string, unknown>) => void) | undefined;
  /** Told the window a model call's "too long" answer states (`window.ts`), to fit the next call to it. */
  readonly onTooLong?: (window: number) => void;
}

/**
 * Sends the request upstream and the answer back: status, headers (hop-by-hop ones aside) and body
 * as they come, streamed chunk by chunk; a copy of a model call's answer is read for its usage.
 * A client that disconnects aborts the upstream request; an upstream that cannot be reached is a
 * 502 in the provider's own error shape.
 */
export async function forward(f: Forwarding): Promise<FastifyReply> {
  const { ctx, provider, request, reply } = f;
  const set: Record<string, string> = f.modelCall ? { 'accept-encoding': 'identity' } : {};
  const length = headerValue(request.headers, 'content-length');
  if (Buffer.isBuffer(f.body)) set['content-length'] = String(f.body.length);
  else if (f.body && length) set['content-length'] = length;
  const abort = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  // A client that left while its request was reduced: its `close` has passed; nothing goes upstream.
  if (reply.raw.destroyed) abort.abort();
  const headers = outcomeHeaders(f.call);
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    answer = await ctx.upstreams.send(
      f.target,
      request.method,
      upstreamRequestHeaders(request.headers, set, f.dropped),
      f.body,
      abort.signal,
    );
  } catch (error) {
    if (abort.signal.aborted) return reply;
    ctx.metrics.requests.inc({ provider: provider.name, outcome: 'upstream_error' });
    const kind = error instanceof UpstreamUnreachable ? error.kind : 'connect';
    ctx.log.warn({ provider: provider.name, kind }, 'proxy: upstream unreachable');
    const message = `the ${provider.name} upstream could not be reached (${kind})`;
    return reply.code(502).headers(headers).type('application/json').send(provider.error(502, message));
  }
  ctx.metrics.upstreamSeconds.observe({ provider: provider.name }, (performance.now() - started) / 1000);
  reply.code(answer.status);
  for (const [name, value] of Object.entries(clientResponseHeaders(answer.headers))) reply.header(name, value);
  reply.headers(headers);
  if ((f.usageFor || f.onUsage) && answer.status >= 200 && answer.status < 300) tapUsage(ctx, provider, answer, f);
  if (f.onTooLong && (answer.status === 400 || answer.status === 413)) tapTooLong(answer, f.onTooLong);
  return reply.send(answer.body);
}

/** Reads the answer's usage from a copy of its bytes and records it against the conversation (and its call's record). */
function tapUsage(
  ctx: ForwardContext,
  provider: Provider,
  answer: UpstreamAnswer,
  { usageFor, onUsage }: Pick<Forwarding, 'usageFor' | 'onUsage'>,
): void {
  const encoding = String(answer.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') return;
  const tap = new UsageTap(String(answer.headers['content-type'] ?? '').includes('text/event-stream'));
  answer.body.on('data', (chunk: Uint8Array) => tap.write(chunk));
  answer.body.once('end', () => {
    const usage = tap.end();
    ctx.metrics.usageRead.inc({ provider: provider.name, found: usage ? 'yes' : 'no' });
    if (!usage) return;
    onUsage?.(usage);
    if (!usageFor) return;
    const { reduction, owner } = usageFor;
    ctx.remember(() => saveUsage(ctx.artifacts, owner, reduction.hash, { usage, covered: reduction.covers }));
  });
}

/** Reads a copy of an error answer's first bytes for the window it states ("prompt is too long: N tokens > M maximum"). */
function tapTooLong(answer: UpstreamAnswer, onTooLong: (window: number) => void): void {
  const chunks: Buffer[] = [];
  let bytes = 0;
  answer.body.on('data', (chunk: Buffer) => {
    if (bytes >= ERROR_READ_MAX) return;
    chunks.push(chunk);
    bytes += chunk.length;
  });
  answer.body.once('end', () => {
    const window = windowFromError(Buffer.concat(chunks, bytes).subarray(0, ERROR_READ_MAX).toString('utf8'));
    if (window !== undefined) onTooLong(window);
  });
}
