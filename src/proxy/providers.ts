/**
 * The three provider APIs the proxy fronts: under which prefix each is served, which of its
 * requests carry a history the proxy reduces and where in the body it sits, how the provider
 * names its credential, its conversation ids, and how it shapes an error of its own. Everything
 * provider-specific the proxy knows is here; the rest of `proxy/` reads these tables.
 */

export type ProviderName = 'anthropic' | 'openai' | 'gemini';

/** A request the proxy reduces: a model call (or a token count) whose body holds a history. */
export interface Reducible {
  /** The wire format of the history (`formats/` registry name). */
  readonly format: 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini';
  /** The body field holding the history. */
  readonly history: 'messages' | 'input' | 'contents';
  /** The body fields counted with the history but never edited: system prompt and tools. */
  readonly system: readonly string[];
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
  /** The provider's own error body for an error of the proxy's (502: its upstream cannot be reached). */
  error(status: number, message: string): unknown;
  /** Request headers that carry the provider credential, in the order they are looked at. */
  readonly credentialHeaders: readonly string[];
  /** A query parameter that may carry the credential (Gemini's `key`). */
  readonly credentialQuery?: string;
}

const anthropic: Provider = {
  name: 'anthropic',
  prefix: '/anthropic',
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    const history = { format: 'anthropic', history: 'messages', system: ['system', 'tools'] } as const;
    if (path === '/v1/messages') return history;
    if (path === '/v1/messages/count_tokens') return { ...history, countOnly: true };
    return undefined;
  },
  error: (_status, message) => ({ type: 'error', error: { type: 'api_error', message } }),
  credentialHeaders: ['x-api-key', 'authorization'],
};

const openai: Provider = {
  name: 'openai',
  prefix: '/openai',
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    if (path === '/v1/responses') return { format: 'openai-responses', history: 'input', system: ['instructions', 'tools'] };
    if (path === '/v1/chat/completions') return { format: 'openai-chat', history: 'messages', system: ['tools'] };
    return undefined;
  },
  error: (status, message) => ({ error: { message, type: status === 502 ? 'upstream_error' : 'server_error', code: null } }),
  credentialHeaders: ['authorization', 'api-key'],
};

/** `/v1beta/models/{model}:generateContent` and `:streamGenerateContent` (also under `/v1`). */
const GEMINI_CALL = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

const gemini: Provider = {
  name: 'gemini',
  prefix: '/gemini',
  reducible(method, path) {
    if (method !== 'POST') return undefined;
    const match = GEMINI_CALL.exec(path);
    if (!match) return undefined;
    return {
      format: 'gemini',
      history: 'contents',
      system: ['systemInstruction', 'system_instruction', 'tools'],
      pathModel: decodeURIComponent(match[1] as string),
      pathStream: match[2] === 'streamGenerateContent',
    };
  },
  error: (status, message) => ({ error: { code: status, message, status: status === 502 ? 'UNAVAILABLE' : 'INTERNAL' } }),
  credentialHeaders: ['x-goog-api-key', 'authorization'],
  credentialQuery: 'key',
};

/** The providers, by name. */
export const PROVIDERS: Readonly<Record<ProviderName, Provider>> = { anthropic, openai, gemini };
