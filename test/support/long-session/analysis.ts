import * as zlib from 'node:zlib';
import { asObject, cacheParts, readRequest, route } from '../provider/parse.js';
import { promptSegments } from '../provider/prefix-cache.js';
import type { JsonValue, RecordedRequest, UsageFigures } from '../provider/types.js';
import { type RelayedCall, SEQ_HEADER } from './relay.js';
import { isCompaction, TASK_TEXT } from './scenario.js';
import type { SummarizerCall } from './summarizer.js';

/** What an upstream request was, as the fake model classified it. */
export type UpstreamKind = 'call' | 'compaction' | 'aux';

/** One model request as the provider received it, with what the harness measured about it. */
export interface UpstreamRecord {
  seq: number;
  kind: UpstreamKind;
  /** The user's prompt string is in the request, byte for byte. */
  taskPresent: boolean;
  /** The prompt's tokens as the fake provider counts them (characters / 4 of tools, system and history). */
  tokens: number;
  usage: UsageFigures | undefined;
  /** The request repeats the previous request of its conversation whole and appends to it (cache markers ignored); undefined for a conversation's first. */
  extendsPrevious: boolean | undefined;
  /** The agent's request this one came from (the relay's tag), when it had one. */
  clientSeq: number | undefined;
  /** The `x-compactor` header the agent got for it, when there was one. */
  compactor: string | undefined;
  /** Milliseconds from the relay forwarding the agent's request to the provider receiving it. */
  heldMs: number | undefined;
  /** A summarizer call was running at some moment of that hold. */
  summarizerRunning: boolean;
  /** A summarizer call ended during that hold (the request was let go after it: it may have waited on it). */
  summarizerEnded: boolean;
  /** A whole summarizer call ran inside that hold (started after the request arrived, ended before it left: a forced summary). */
  summarizerInside: boolean;
  /** Milliseconds the provider took to answer it whole (headers and body). */
  answerMs: number | undefined;
}

/** One model call as the agent made it (through the relay): what it got back, how long it took. */
export interface ClientRecord {
  seq: number;
  kind: UpstreamKind;
  compactor: string | undefined;
  compactorTokens: string | undefined;
  status: number | undefined;
  /** Milliseconds from the request read whole to the answer's last byte. */
  durationMs: number | undefined;
  /** The provider received it (or a request made from it). */
  forwarded: boolean;
}

/** Undoes a request body's `content-encoding` (Codex may compress). */
function decode(raw: Buffer, encoding: string | string[] | undefined): Buffer {
  const e = Array.isArray(encoding) ? encoding[0] : encoding;
  if (!e || e === 'identity') return raw;
  if (e === 'gzip') return zlib.gunzipSync(raw);
  if (e === 'deflate') return zlib.inflateSync(raw);
  if (e === 'br') return zlib.brotliDecompressSync(raw);
  const zstd = (zlib as { zstdDecompressSync?: (b: Buffer) => Buffer }).zstdDecompressSync;
  if (e === 'zstd' && zstd) return zstd(raw);
  return raw;
}

function parsed(raw: Buffer, encoding: string | string[] | undefined): JsonValue | undefined {
  try {
    return JSON.parse(decode(raw, encoding).toString('utf8')) as JsonValue;
  } catch {
    return undefined;
  }
}

/** Whether a path is a model call (not a token count or another endpoint). */
export function isModelPath(path: string): boolean {
  const r = route('POST', path.split('?')[0] ?? path, new URLSearchParams());
  return r?.endpoint === 'model';
}

/** A model request's kind and conversation, read from its path, headers and body. */
function classify(
  path: string,
  json: JsonValue | undefined,
  headers: RecordedRequest['headers'],
): { kind: UpstreamKind; conversation: string; segments: string[] } | undefined {
  const r = route('POST', path.split('?')[0] ?? path, new URLSearchParams());
  const body = asObject(json);
  if (r?.endpoint !== 'model' || !body) return undefined;
  const request = readRequest(0, r, body, headers, path);
  const parts = cacheParts(r.wire, body);
  const kind: UpstreamKind = isCompaction(request) ? 'compaction' : request.tools.length > 0 ? 'call' : 'aux';
  return { kind, conversation: request.conversation, segments: promptSegments(parts.tools, parts.system, parts.history) };
}

function extendsWhole(earlier: readonly string[], now: readonly string[]): boolean {
  return earlier.length <= now.length && earlier.every((s, i) => s === now[i]);
}

function relayedSeq(r: RecordedRequest): number | undefined {
  const raw = r.headers[SEQ_HEADER];
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  return Number.isInteger(value) ? value : undefined;
}

/**
 * The provider's model requests, in arrival order, each with what the harness measured: the
 * task text, tokens, whether it extends the previous request of its conversation, the outcome
 * the agent was told, and the time it was held before it arrived (and whether a summarizer call
 * ran or ended meanwhile).
 */
export function upstreamRecords(
  requests: readonly RecordedRequest[],
  relayed: readonly RelayedCall[],
  summarizer: readonly SummarizerCall[],
): UpstreamRecord[] {
  const out: UpstreamRecord[] = [];
  const last = new Map<string, string[]>();
  for (const r of requests) {
    if (r.endpoint !== 'model') continue;
    const c = classify(r.path, r.json, r.headers);
    if (!c) continue;
    const previous = last.get(c.conversation);
    last.set(c.conversation, c.segments);
    const clientSeq = relayedSeq(r);
    const call = clientSeq === undefined ? undefined : relayed[clientSeq];
    const heldMs = call ? r.receivedAt - call.forwardAt : undefined;
    const during = (s: SummarizerCall) => call !== undefined && s.start <= r.receivedAt && (s.end ?? Infinity) >= call.forwardAt;
    const ended = (s: SummarizerCall) =>
      call !== undefined && s.end !== undefined && s.end >= call.forwardAt && s.end <= r.receivedAt;
    const inside = (s: SummarizerCall) => call !== undefined && s.start >= call.forwardAt && ended(s);
    out.push({
      seq: r.seq,
      kind: c.kind,
      taskPresent: r.raw.length > 0 && JSON.stringify(r.json).includes(TASK_TEXT),
      tokens: r.usage?.input ?? 0,
      usage: r.usage,
      extendsPrevious: previous === undefined ? undefined : extendsWhole(previous, c.segments),
      clientSeq,
      compactor: call?.compactor,
      heldMs,
      summarizerRunning: summarizer.some(during),
      summarizerEnded: summarizer.some(ended),
      summarizerInside: summarizer.some(inside),
      answerMs: r.timing.endMs === undefined ? undefined : r.timing.endMs - (r.timing.bodyMs ?? 0),
    });
  }
  return out;
}

/** The agent's model calls as the relay saw them, each with its outcome and whether the provider received it. */
export function clientRecords(relayed: readonly RelayedCall[], upstream: readonly UpstreamRecord[]): ClientRecord[] {
  const forwarded = new Set(upstream.map((u) => u.clientSeq));
  const out: ClientRecord[] = [];
  for (const call of relayed) {
    const c = classify(call.url, parsed(call.body, call.headers['content-encoding']), call.headers);
    if (!c) continue;
    out.push({
      seq: call.seq,
      kind: c.kind,
      compactor: call.compactor,
      compactorTokens: call.compactorTokens,
      status: call.status,
      durationMs: call.endAt === undefined ? undefined : call.endAt - call.forwardAt,
      forwarded: forwarded.has(call.seq),
    });
  }
  return out;
}

/** The reason of an `x-compactor: bypass; reason=…` header, or undefined for any other outcome. */
export function bypassReason(outcome: string | undefined): string | undefined {
  if (!outcome?.startsWith('bypass')) return undefined;
  return /reason=([^;\s]+)/.exec(outcome)?.[1] ?? 'unspecified';
}

/** The value at quantile `q` (0–1) of `values` (nearest rank), or undefined when there are none. */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
