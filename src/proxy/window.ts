import { resolveModel } from '../tokens/models.js';

/**
 * The context window the proxy fits a model call to, for any model. In order: the window the
 * request declares (`context_window` in `x-compactor-options` or `COMPACTOR_PROXY_OPTIONS`); the
 * window the provider itself reported when a call of that model was too long (Anthropic's
 * `prompt is too long: N tokens > M maximum`, OpenAI's `context_length_exceeded` with its
 * "maximum context length is M tokens"), learned per owner, provider and model; the model table,
 * whose prefix rule is the family rule (`claude-sonnet-9-9` takes Claude's window); else
 * `COMPACTOR_DEFAULT_CONTEXT_WINDOW`. Nothing is retried: the client retries, and its next call
 * is fitted to the learned window.
 */

/** Windows learned from the providers' own "too long" answers: the oldest forgotten past this. */
const LEARNED_MAX = 4096;
/** Bytes of an error answer read for its limit. */
export const ERROR_READ_MAX = 16 * 1024;

const ANTHROPIC_TOO_LONG = /prompt is too long: \d+ tokens > (\d+) maximum/;
const OPENAI_TOO_LONG = /maximum context length is (\d+) tokens/;

/** The window a provider's "too long" error body states, if it states one. */
export function windowFromError(body: string): number | undefined {
  const m = ANTHROPIC_TOO_LONG.exec(body) ?? (body.includes('context_length_exceeded') ? OPENAI_TOO_LONG.exec(body) : null);
  const value = m ? Number(m[1]) : Number.NaN;
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

export class Windows {
  private readonly learned = new Map<string, number>();

  constructor(private readonly fallback: number) {}

  /** Remembers the window a provider reported for `key` (owner, provider, model). */
  learn(key: string, window: number): void {
    this.learned.delete(key);
    if (this.learned.size >= LEARNED_MAX) this.learned.delete(this.learned.keys().next().value as string);
    this.learned.set(key, window);
  }

  /**
   * The `context_window` to give fit for `model`, or undefined where the request declares one
   * or the table's window stands.
   */
  windowFor(key: string, model: string | undefined, options: Record<string, unknown>): number | undefined {
    if (typeof options.context_window === 'number') return undefined;
    const learned = this.learned.get(key);
    if (learned !== undefined) return learned;
    return resolveModel(model).contextWindow === undefined ? this.fallback : undefined;
  }
}

/** The key a learned window is kept under: never a credential, only the owner's scope id. */
export const windowKey = (scope: string, provider: string, model: string | undefined) => `${scope}\0${provider}\0${model ?? ''}`;
