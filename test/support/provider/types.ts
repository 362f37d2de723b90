import type { IncomingHttpHeaders } from 'node:http';

/** A JSON value as `JSON.parse` returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** The provider wire protocols the fake provider speaks. */
export type Wire = 'anthropic' | 'openai-responses' | 'openai-chat' | 'gemini';

/** Which endpoint a request reached: a model call, a token count, or anything else (answered 404). */
export type Endpoint = 'model' | 'count_tokens' | 'other';

/** One tool the client offered, as the scenario sees it. */
export interface ToolSpec {
  name: string;
  /** The tool's `type` (`function`, `custom`, `web_search`, …; Anthropic's client tools have none: `custom`). */
  kind: string;
  /** Its JSON schema for arguments, when it has one. */
  schema: JsonObject | undefined;
}

/** A parsed model request: what a scenario decides its reply from. */
export interface ModelRequest {
  /** Position of this request in the provider's record (0-based). */
  seq: number;
  wire: Wire;
  model: string;
  stream: boolean;
  /** The parsed body, as the client sent it. */
  body: JsonObject;
  headers: IncomingHttpHeaders;
  url: string;
  tools: ToolSpec[];
  /** The history items: `messages`, Responses `input` (a string becomes one user item) or Gemini `contents`. */
  history: JsonValue[];
  /** Tool results already in the history (which step of a scripted task this is). */
  toolResults: number;
  /** The key the prompt-cache simulation keys this request's conversation by. */
  conversation: string;
}

/** A tool call the fake model makes. `input` is the arguments object (for a Responses custom tool, `{input: "…"}`). */
export interface ToolCall {
  name: string;
  /** Responses: the namespace of a tool loaded by a tool search (Codex's MCP tools: `mcp__<server>`). */
  namespace?: string;
  input: JsonObject;
  /** Default: derived from the request's position. */
  id?: string;
}

/** Text generated on the fly, never held whole: `bytes` bytes of `line` repeated (throughput tests). */
export interface LargeText {
  bytes: number;
  /** Default: a numbered line of about 80 characters. */
  line?: string;
}

/** A fault the fake provider produces instead of (or in the middle of) its answer. */
export type Fault =
  /** An HTTP error status with the provider's own error body, optionally with `retry-after` (seconds). */
  | { kind: 'status'; status: number; message?: string; retryAfter?: number }
  /** Stop writing after this many events (SSE frames, or JSON-array elements) and never end the answer. */
  | { kind: 'stall'; afterEvents: number }
  /** Destroy the connection after this many events. */
  | { kind: 'reset'; afterEvents: number };

/** What the fake model answers one request with. */
export interface Reply {
  text?: string | LargeText;
  toolCalls?: ToolCall[];
  /** Wait this long before sending headers. */
  delayMs?: number;
  fault?: Fault;
  /** Replace the reported usage (default: counted, with the prompt-cache simulation). */
  usage?: Partial<UsageFigures>;
  /**
   * Responses: one `compaction` output item with this `encrypted_content` (the built-in provider's
   * answer to Codex's `compaction_trigger`, which requires exactly one), after any text.
   */
  compaction?: string;
}

/** A scenario: decides the reply to each model request. */
export type Scenario = (request: ModelRequest) => Reply | Promise<Reply>;

/** Token figures of one answer, in provider-neutral names. */
export interface UsageFigures {
  /** Every prompt token, cached or not. */
  input: number;
  output: number;
  /** Prompt tokens read from the (simulated) cache. */
  cacheRead: number;
  /** Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`). */
  cacheWrite: number;
}

/** Where the simulated prompt cache matched a request against earlier ones. */
export interface CacheReport {
  /** Characters of the serialized prompt. */
  promptChars: number;
  /** Characters of its longest common prefix with an earlier request of the same conversation. */
  commonChars: number;
  /** Index of the segment (0 tools, 1 system, 2… history items) where that prefix ends, or -1 when all match. */
  brokeAtSegment: number;
}

/** One request as the fake provider received it. */
export interface RecordedRequest {
  seq: number;
  method: string;
  url: string;
  /** The URL's path, without the query. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body's bytes as received (compressed when the client compressed it). */
  raw: Buffer;
  /** The body's JSON, when it parsed (after `content-encoding` was undone). */
  json: JsonValue | undefined;
  wire: Wire | undefined;
  endpoint: Endpoint;
  /** `Date.now()` when the request arrived. */
  receivedAt: number;
  /**
   * Milliseconds after arrival, set as they happen: body read, headers sent, the answer's last
   * byte written (`finishMs`: absent when it was cut or never ended), the response closed
   * (`endMs`: finished, or closed by the other side).
   */
  timing: { bodyMs: number; headersMs?: number; finishMs?: number; endMs?: number };
  status?: number;
  usage?: UsageFigures;
  cache?: CacheReport;
}
