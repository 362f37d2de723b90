import type { TextSource } from './text.js';
import type { JsonObject, ModelRequest, UsageFigures } from './types.js';

/** An answer ready to encode: the reply with its ids and usage settled. */
export interface Answer {
  /** A base id, unique per request (`fake_<seq>`). */
  id: string;
  model: string;
  text: TextSource | undefined;
  /** `custom`: a Responses custom tool; `search`: a Responses client-run `tool_search` (a `tool_search_call` item). */
  toolCalls: { id: string; name: string; namespace?: string; input: JsonObject; custom: boolean; search?: boolean }[];
  usage: UsageFigures;
  /** Responses: a `compaction` output item's `encrypted_content` (`Reply.compaction`). */
  compaction?: string;
}

/**
 * One event of a stream: a string, or the pieces of one event written in turn (an event that
 * carries a large text whole), so that stall and reset faults count events, not writes.
 */
export type StreamEvent = string | Iterable<string>;

/** How one wire protocol encodes answers and errors. */
export interface WireEncoder {
  /** The stream's events, generated lazily. */
  stream(answer: Answer, request: ModelRequest, form: 'sse' | 'array'): Iterable<StreamEvent>;
  /** The non-streaming body. */
  json(answer: Answer, request: ModelRequest): JsonObject;
  /** The provider's own error body for a status. */
  error(status: number, message: string): JsonObject;
  /** The answer to a token count. */
  countTokens(tokens: number): JsonObject;
  /** The response header naming the request, as the provider names it. */
  requestIdHeader: string;
}

/** Splits a JSON text into a few pieces, as providers stream tool arguments. */
export function jsonPieces(text: string, pieces = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
