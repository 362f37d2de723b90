import type { z } from 'zod';
import type { ArtifactResponse, ExpandRequest, ExpandResponse } from './schemas/artifacts.js';
import type { Problem } from './schemas/common.js';
import type { StrategyAnswer, StrategyRequest } from './schemas/strategies.js';
import type { TokensRequest, TokensResponse, ValidateRequest, ValidateResponse } from './schemas/tokens.js';

/** A problem document the service answered with, as an error. */
export class CompactorHttpError extends Error {
  override name = 'CompactorHttpError';
  constructor(
    readonly status: number,
    readonly problem: z.output<typeof Problem> | undefined,
    /** The service's `retry-after` on a 429 or 503, in seconds. */
    readonly retryAfterSeconds?: number,
  ) {
    super(problem ? `${problem.code}: ${problem.detail}` : `HTTP ${status}`);
  }
}

export interface CompactorClientOptions {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>` when the service has keys configured. */
  apiKey?: string;
  /** Per-request deadline in ms (default 60 s), retries included. */
  timeoutMs?: number;
  /**
   * Retries after a 429 or 503 that carries `retry-after`, waiting what it says (default 2).
   * Every endpoint is safe to repeat: the same request gives the same answer. A wait that would
   * pass the deadline is not taken; the error is thrown instead.
   */
  retries?: number;
  fetch?: typeof fetch;
}

/**
 * A typed client for Compactor, its request and response types taken from the same zod schemas
 * the service validates with. Every method throws `CompactorHttpError` on a 4xx/5xx answer.
 */
export class CompactorClient {
  private readonly base: string;
  private readonly doFetch: typeof fetch;

  constructor(private readonly options: CompactorClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.doFetch = options.fetch ?? fetch;
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const deadline = Date.now() + (this.options.timeoutMs ?? 60_000);
    const payload = body !== undefined ? JSON.stringify(body) : undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(method, path, payload, deadline);
      } catch (error) {
        const wait = error instanceof CompactorHttpError ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
        if (!wait || attempt >= (this.options.retries ?? 2) || Date.now() + wait >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async once<T>(method: 'GET' | 'POST', path: string, payload: string | undefined, deadline: number): Promise<T> {
    const res = await this.doFetch(`${this.base}${path}`, {
      method,
      headers: {
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      },
      ...(payload !== undefined ? { body: payload } : {}),
      signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (!res.ok) {
      const after = Number(res.headers.get('retry-after'));
      const retryable = (res.status === 429 || res.status === 503) && Number.isFinite(after) && after > 0;
      throw new CompactorHttpError(res.status, parsed as z.output<typeof Problem> | undefined, retryable ? after : undefined);
    }
    return parsed as T;
  }

  window(req: StrategyRequest<'window'>): Promise<StrategyAnswer<'window'>> {
    return this.call('POST', '/v1/window', req);
  }
  compact(req: StrategyRequest<'compact'>): Promise<StrategyAnswer<'compact'>> {
    return this.call('POST', '/v1/compact', req);
  }
  summarize(req: StrategyRequest<'summarize'>): Promise<StrategyAnswer<'summarize'>> {
    return this.call('POST', '/v1/summarize', req);
  }
  fit(req: StrategyRequest<'fit'>): Promise<StrategyAnswer<'fit'>> {
    return this.call('POST', '/v1/fit', req);
  }
  tokens(req: z.input<typeof TokensRequest>): Promise<z.output<typeof TokensResponse>> {
    return this.call('POST', '/v1/tokens', req);
  }
  validate(req: z.input<typeof ValidateRequest>): Promise<z.output<typeof ValidateResponse>> {
    return this.call('POST', '/v1/validate', req);
  }
  expand(req: z.input<typeof ExpandRequest>): Promise<z.output<typeof ExpandResponse>> {
    return this.call('POST', '/v1/expand', req);
  }
  artifact(id: string): Promise<z.output<typeof ArtifactResponse>> {
    return this.call('GET', `/v1/artifacts/${encodeURIComponent(id)}`);
  }
}
