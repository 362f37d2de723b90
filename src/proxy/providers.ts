import type { IncomingHttpHeaders } from 'node:http';
import { type ProviderName, prefixOf } from '../provider-names.js';
import type { BypassReason } from './bypass.js';
import { type CacheMarkers, cacheMarkers } from './cache-markers.js';
import { anthropicError, geminiError, openaiError } from './errors.js';

/**
 * The three provider APIs the proxy fronts: under which prefix each is served, which of its
 * requests carry a history the proxy reduces and where in the body its history, system prompt
 * and tools sit, how the provider names its credential, the conversation ids its agents send,
 * its cache markers, the requests it keeps a conversation for itself, and how it shapes an error
 * of its own. Everything provider-specific the proxy knows is here; the rest of `proxy/` reads
 * these entries.
 */

export type { ProviderName } from '../provider-names.js';

type Body = Record<string, unknown>;

/** A request the proxy reduces: a model call (or a token count) whose body holds a history. */
export interface Reducible {
  /** The wire format of the history (`formats/` registry name). */
  readonly format: 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini';
  /** The body field holding the history. */
  readonly history: 'messages' | 'input' | 'contents';
  /** The system prompt, counted with the history but never edited (undefined: the format has none apart). */
  systemOf(body: Body): unknown;
  /** The tool definitions, counted with the history but never edited. */
  toolsOf(body: Body): unknown[] | undefined;
  /** Whether the proxy only counts (Anthropic `count_tokens`): reduced as it would be sent, no state written. */
  readonly countOnly?: boolean;
  /** The model named in the path (Gemini), when there is one. */
  readonly pathModel?: string;
  /** Whether the answer streams: from the path (Gemini) or the body's `stream`. */
  readonly pathStream?: boolean;
}

export interface Provider {
  readonly name: ProviderName;
  /** The path prefix the proxy serves it under. */
  readonly prefix: `/${ProviderName}`;
  /** The reducible request at `path` (the part after the prefix, without the query), if it is one. */
  reducible(method: string, path: string): Reducible | undefined;
  /** The provider's own error body for an error of the proxy's, with the provider's type for `status` (`errors.ts`). */
  error(status: number, message: string): unknown;
  /** Request headers that carry the provider credential, in the order they are looked at. */
  readonly credentialHeaders: readonly string[];
  /** A query parameter that may carry the credential (Gemini's `key`). */
  readonly credentialQuery?: string;
  /** The conversation id the client itself sends, where it sends one. */
  sessionOf(headers: IncomingHttpHeaders, body: Body): string | undefined;
  /** Its cache markers: left out when histories are compared, followed by messages of ours. */
  readonly markers: CacheMarkers;
  /** Why a reducible request must go on as it came (a conversation the provider keeps), if it must. */
  keptUpstream(body: Body): BypassReason | undefined;
}

const first = (headers: IncomingHttpHeaders, name: string) => [headers[name]].flat()[0];
const tools = (body: Body) => (Array.isArray(body.tools) ? body.tools : undefined);

/**
 * The conversation id today's agents send: Claude Code's `x-claude-code-session-id`, Codex's
 * `session-id` (or `session_id`) header or `prompt_cache_key`, an Anthropic `metadata.user_id`
 * (Claude Code's holds its session id). Undefined when none: the conversation is then known by
 * its system prompt and first message only. Read for every provider: agents speak more than one.
 */
export function agentSession(headers: IncomingHttpHeaders, body: Body): string | undefined {
  for (const name of ['x-claude-code-session-id', 'session-id', 'session_id', 'x-session-id']) {
    const value = first(headers, name);
    if (value) return `${name}:${value}`;
  }
  if (typeof body.prompt_cache_key === 'string') return `prompt_cache_key:${body.prompt_cache_key}`;
  const metadata = body.metadata;
  if (typeof metadata === 'object' && metadata !== null && typeof (metadata as { user_id?: unknown }).user_id === 'string') {
    return `user_id:${(metadata as { user_id: string }).user_id}`;
  }
  return undefined;
}

/** `cache_control`: Anthropic's marker, which the OpenAI-compatible APIs (and opencode) carry too. */
const CACHE_CONTROL = cacheMarkers('cache_control');
/** A Responses call that names the previous one: the provider keeps that conversation, not the body. */
const previousResponse = (body: Body): BypassReason | undefined =>
  body.previous_response_id !== undefined && body.previous_response_id !== null ? 'previous_response_id' : undefined;

const anthropic: Provider = {
  name: 'anthropic',
  prefix: prefixOf('anthropic'),
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    const history = { format: 'anthropic', history: 'messages', systemOf: (b: Body) => b.system, toolsOf: tools } as const;
    if (path === '/v1/messages') return history;
    if (path === '/v1/messages/count_tokens') return { ...history, countOnly: true };
    return undefined;
  },
  error: anthropicError,
  credentialHeaders: ['x-api-key', 'authorization'],
  sessionOf: agentSession,
  markers: CACHE_CONTROL,
  keptUpstream: previousResponse,
};

const openai: Provider = {
  name: 'openai',
  prefix: prefixOf('openai'),
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    if (path === '/v1/responses')
      return { format: 'openai-responses', history: 'input', systemOf: (b) => b.instructions, toolsOf: tools };
    // Chat's system prompt is a message of its history.
    if (path === '/v1/chat/completions')
      return { format: 'openai-chat', history: 'messages', systemOf: () => undefined, toolsOf: tools };
    return undefined;
  },
  error: openaiError,
  credentialHeaders: ['authorization', 'api-key'],
  sessionOf: agentSession,
  markers: CACHE_CONTROL,
  keptUpstream: previousResponse,
};

/** `/v1beta/models/{model}:generateContent` and `:streamGenerateContent` (also under `/v1`). */
const GEMINI_CALL = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

const gemini: Provider = {
  name: 'gemini',
  prefix: prefixOf('gemini'),
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    const match = GEMINI_CALL.exec(path);
    if (!match) return undefined;
    return {
      format: 'gemini',
      history: 'contents',
      systemOf: (b) => b.systemInstruction ?? b.system_instruction,
      toolsOf: tools,
      pathModel: decodeURIComponent(match[1] as string),
      pathStream: match[2] === 'streamGenerateContent',
    };
  },
  error: geminiError,
  credentialHeaders: ['x-goog-api-key', 'authorization'],
  credentialQuery: 'key',
  sessionOf: agentSession,
  markers: CACHE_CONTROL,
  keptUpstream: previousResponse,
};

/** The providers, by name. */
export const PROVIDERS: Readonly<Record<ProviderName, Provider>> = { anthropic, openai, gemini };
