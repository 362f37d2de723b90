import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { promptSegments } from './prefix-cache.js';
import type { Endpoint, JsonObject, JsonValue, ModelRequest, ToolSpec, Wire } from './types.js';

/** Where a request goes: its wire, its endpoint, and what the URL itself says (Gemini's model and stream form). */
export interface Route {
  wire: Wire;
  endpoint: Endpoint;
  /** Gemini: the model named in the path. */
  model?: string;
  /** Gemini: `:streamGenerateContent` (with `sse` when `?alt=sse`, else the JSON-array form). */
  geminiStream?: 'sse' | 'array';
}

/**
 * Routes a request by its path's end, whatever prefix precedes it (a proxy's `/anthropic/…`, a
 * base URL's own path): Anthropic `/v1/messages` and `/v1/messages/count_tokens`, OpenAI
 * `/responses`, `/responses/input_tokens` and `/chat/completions`, Gemini
 * `/models/{model}:generateContent`, `:streamGenerateContent` and `:countTokens`.
 */
export function route(method: string, path: string, query: URLSearchParams): Route | undefined {
  if (method !== 'POST') return undefined;
  if (/\/v1\/messages$/.test(path)) return { wire: 'anthropic', endpoint: 'model' };
  if (/\/v1\/messages\/count_tokens$/.test(path)) return { wire: 'anthropic', endpoint: 'count_tokens' };
  if (/\/responses$/.test(path)) return { wire: 'openai-responses', endpoint: 'model' };
  if (/\/responses\/input_tokens$/.test(path)) return { wire: 'openai-responses', endpoint: 'count_tokens' };
  if (/\/chat\/completions$/.test(path)) return { wire: 'openai-chat', endpoint: 'model' };
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(path);
  if (!gemini) return undefined;
  const model = decodeURIComponent(gemini[1] ?? '');
  if (gemini[2] === 'countTokens') return { wire: 'gemini', endpoint: 'count_tokens', model };
  if (gemini[2] === 'generateContent') return { wire: 'gemini', endpoint: 'model', model };
  return { wire: 'gemini', endpoint: 'model', model, geminiStream: query.get('alt') === 'sse' ? 'sse' : 'array' };
}

/** The value as an object, or undefined. */
export function asObject(value: JsonValue | undefined): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

/** The value as an array (empty when it is not one). */
export function asArray(value: JsonValue | undefined): JsonValue[] {
  return Array.isArray(value) ? value : [];
}

function str(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Responses: the tools an `additional_tools` input item declares (Codex's default model sends its
 * tools there, not in `tools`), namespaces flattened.
 */
function additionalTools(body: JsonObject): ToolSpec[] {
  const out: ToolSpec[] = [];
  const items = Array.isArray(body.input) ? body.input : [];
  for (const raw of items) {
    const item = asObject(raw);
    if (item?.type !== 'additional_tools') continue;
    for (const declared of asArray(item.tools)) {
      const tool = asObject(declared);
      const inner = tool?.type === 'namespace' ? asArray(tool.tools).map(asObject) : [tool];
      for (const t of inner) {
        const name = str(t?.name);
        if (t && name) out.push({ name, kind: str(t.type) ?? 'function', schema: asObject(t.parameters) });
      }
    }
  }
  return out;
}

function toolsOf(wire: Wire, body: JsonObject): ToolSpec[] {
  const out: ToolSpec[] = wire === 'openai-responses' ? additionalTools(body) : [];
  for (const raw of asArray(body.tools)) {
    const tool = asObject(raw);
    if (!tool) continue;
    if (wire === 'gemini') {
      for (const decl of asArray(tool.functionDeclarations ?? tool.function_declarations)) {
        const d = asObject(decl);
        const name = str(d?.name);
        if (d && name) out.push({ name, kind: 'function', schema: asObject(d.parameters ?? d.parametersJsonSchema) });
      }
      continue;
    }
    const fn = wire === 'openai-chat' ? asObject(tool.function) : tool;
    const kind = str(tool.type) ?? 'custom';
    const name = str(fn?.name) ?? kind;
    const schema = asObject(wire === 'anthropic' ? tool.input_schema : fn?.parameters);
    out.push({ name, kind, schema });
  }
  return out;
}

/** The history items of a body: `messages`, Responses `input` (a string is one user message) or `contents`. */
export function historyOf(wire: Wire, body: JsonObject): JsonValue[] {
  if (wire === 'openai-responses') {
    const input = body.input;
    return typeof input === 'string' ? [{ role: 'user', content: input }] : asArray(input);
  }
  return asArray(wire === 'gemini' ? body.contents : body.messages);
}

/** The top-level system prompt of a body (Anthropic `system`, Responses `instructions`, Gemini `systemInstruction`). */
export function systemOf(wire: Wire, body: JsonObject): JsonValue | undefined {
  if (wire === 'anthropic') return body.system;
  if (wire === 'openai-responses') return body.instructions;
  if (wire === 'gemini') return body.systemInstruction ?? body.system_instruction;
  return undefined;
}

/** A string as Anthropic's one-text-block array: the same prompt to the model (and its cache). */
function textBlocks(value: JsonValue | undefined): JsonValue | undefined {
  return typeof value === 'string' ? [{ type: 'text', text: value }] : value;
}

/**
 * What a provider's cache reads of a body: its tools, system prompt and history, with Anthropic's
 * string contents as the one text block they stand for (Claude Code sends a message as blocks
 * while it holds the cache breakpoint, as a string after).
 */
export function cacheParts(
  wire: Wire,
  body: JsonObject,
): { tools: JsonValue | undefined; system: JsonValue | undefined; history: JsonValue[] } {
  const history = historyOf(wire, body);
  if (wire !== 'anthropic') return { tools: body.tools, system: systemOf(wire, body), history };
  return {
    tools: body.tools,
    system: textBlocks(body.system),
    history: history.map((raw) => {
      const m = asObject(raw);
      return m && typeof m.content === 'string' ? { ...m, content: textBlocks(m.content) ?? null } : raw;
    }),
  };
}

/** Tool results in a history: Chat `tool` messages, Responses `*_call_output` items, Anthropic `tool_result` blocks, Gemini `functionResponse` parts. */
export function countToolResults(wire: Wire, history: JsonValue[]): number {
  let n = 0;
  for (const raw of history) {
    const item = asObject(raw);
    if (!item) continue;
    if (wire === 'openai-chat') n += item.role === 'tool' || item.role === 'function' ? 1 : 0;
    else if (wire === 'openai-responses') n += /_call_output$/.test(str(item.type) ?? '') ? 1 : 0;
    else {
      const parts = asArray(wire === 'gemini' ? item.parts : item.content);
      for (const part of parts) {
        const p = asObject(part);
        if (wire === 'gemini' ? p?.functionResponse !== undefined : p?.type === 'tool_result') n++;
      }
    }
  }
  return n;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The key a conversation's prompts are cached under: the client's own session id where it sends
 * one (`x-claude-code-session-id`, `session_id`/`session-id`, opencode's `x-session-id`, `prompt_cache_key`,
 * `metadata.user_id`), else a hash of the system prompt and the first history item.
 */
export function conversationKey(wire: Wire, body: JsonObject, headers: IncomingHttpHeaders): string {
  const own =
    header(headers, 'x-claude-code-session-id') ??
    header(headers, 'session_id') ??
    header(headers, 'session-id') ??
    header(headers, 'x-session-id') ??
    str(body.prompt_cache_key) ??
    str(asObject(body.metadata)?.user_id);
  if (own !== undefined) return `session:${own}`;
  const segments = promptSegments(undefined, systemOf(wire, body), historyOf(wire, body).slice(0, 1));
  return `hash:${createHash('sha256').update(segments.join('\n')).digest('hex').slice(0, 16)}`;
}

/** A model request's neutral view, for scenarios. */
export function readRequest(seq: number, r: Route, body: JsonObject, headers: IncomingHttpHeaders, url: string): ModelRequest {
  const history = historyOf(r.wire, body);
  return {
    seq,
    wire: r.wire,
    model: r.model ?? str(body.model) ?? 'unknown',
    stream: r.wire === 'gemini' ? r.geminiStream !== undefined : body.stream === true,
    body,
    headers,
    url,
    tools: toolsOf(r.wire, body),
    history,
    toolResults: countToolResults(r.wire, history),
    conversation: conversationKey(r.wire, body, headers),
  };
}
