/**
 * A typed client for Compactor with no runtime dependencies: the global `fetch` of Node 18+ (or a
 * browser, Deno, Bun) and the types generated from the service's OpenAPI document (`openapi.ts`).
 */
import type { components } from './openapi.js';
export type { components, paths } from './openapi.js';
type Schemas = components['schemas'];
/** One message in its provider's own wire format; unknown fields are kept. */
export type Message = Schemas['Message'];
/** The problem document (RFC 9457) every 4xx/5xx answer carries. */
export type Problem = Schemas['Problem'];
export type HealthStatus = Schemas['HealthStatus'];
export type Artifact = Schemas['Artifact'];
/** A summary fit prepares in the background (`GET /v1/prepared/{id}`). */
export type PreparedSummary = Schemas['PreparedSummary'];
/**
 * A request or response with its `messages` typed as the caller's own message type `M`: the
 * service answers in the format it was sent, so what goes in as `M` comes back as `M`.
 */
type WithMessages<T, M> = Omit<T, 'messages'> & {
    messages: M[];
};
export type WindowRequest<M extends object = Message> = WithMessages<Schemas['WindowRequest'], M>;
export type WindowResponse<M extends object = Message> = WithMessages<Schemas['WindowResponse'], M>;
export type CompactRequest<M extends object = Message> = WithMessages<Schemas['CompactRequest'], M>;
export type CompactResponse<M extends object = Message> = WithMessages<Schemas['CompactResponse'], M>;
export type SummarizeRequest<M extends object = Message> = WithMessages<Schemas['SummarizeRequest'], M>;
export type SummarizeResponse<M extends object = Message> = WithMessages<Schemas['SummarizeResponse'], M>;
export type FitRequest<M extends object = Message> = WithMessages<Schemas['FitRequest'], M>;
export type FitResponse<M extends object = Message> = WithMessages<Schemas['FitResponse'], M>;
export type ExpandRequest<M extends object = Message> = WithMessages<Schemas['ExpandRequest'], M>;
export type ExpandResponse<M extends object = Message> = WithMessages<Schemas['ExpandResponse'], M>;
export type TokensRequest<M extends object = Message> = WithMessages<Schemas['TokensRequest'], M>;
export type TokensResponse = Schemas['TokensResponse'];
export type ValidateRequest<M extends object = Message> = WithMessages<Schemas['ValidateRequest'], M>;
export type ValidateResponse = Schemas['ValidateResponse'];
/** The part of a `fetch` response the client reads. */
export interface FetchResponseLike {
    status: number;
    ok: boolean;
    headers: {
        get(name: string): string | null;
    };
    text(): Promise<string>;
}
/** A `fetch`-compatible function (the global one by default). */
export type FetchLike = (url: string, init: {
    method: string;
    headers: Record<string, string>;
    body?: string;
    signal?: AbortSignal;
}) => Promise<FetchResponseLike>;
/** An answer with a 4xx/5xx status, carrying the problem document the service sent. */
export declare class CompactorHttpError extends Error {
    readonly status: number;
    /** The problem document; undefined when the body was not JSON (a proxy's page, say). */
    readonly problem: Problem | undefined;
    /** The service's `retry-after` on a 429 or 503, in seconds. */
    readonly retryAfterSeconds?: number | undefined;
    name: string;
    constructor(status: number, 
    /** The problem document; undefined when the body was not JSON (a proxy's page, say). */
    problem: Problem | undefined, 
    /** The service's `retry-after` on a 429 or 503, in seconds. */
    retryAfterSeconds?: number | undefined);
}
export interface CompactorClientOptions {
    /** e.g. `http://127.0.0.1:8080` (a trailing slash is fine). */
    baseUrl: string;
    /** Sent as `Authorization: Bearer <key>` when the service has keys configured. */
    apiKey?: string | undefined;
    /** Per-call deadline in ms (default 60 000), retries and their waits included. */
    timeoutMs?: number | undefined;
    /**
     * Retries after a 429 or 503 that carries `retry-after`, waiting what it says (default 2).
     * Every endpoint is safe to repeat: the same request gives the same answer. A wait that would
     * pass the deadline is not taken; the error is thrown instead. Other errors are never retried.
     */
    retries?: number | undefined;
    /** The `fetch` to use (default: the global one). */
    fetch?: FetchLike | undefined;
}
/**
 * A client for every endpoint of Compactor's API, version 1. Each method throws
 * `CompactorHttpError` on a 4xx/5xx answer (after the retries a `retry-after` allows), and the
 * `fetch` error (a `TimeoutError` past `timeoutMs`, a `TypeError` when nothing answers) otherwise.
 */
export declare class CompactorClient {
    private readonly options;
    private readonly base;
    private readonly doFetch;
    constructor(options: CompactorClientOptions);
    private call;
    private once;
    /** `POST /v1/window`: keep the newest runs, messages or tokens; drop the rest. */
    window<M extends object = Message>(req: WindowRequest<M>): Promise<WindowResponse<M>>;
    /** `POST /v1/compact`: clear, offload, truncate and dedupe old tool traffic and thinking (reversible). */
    compact<M extends object = Message>(req: CompactRequest<M>): Promise<CompactResponse<M>>;
    /** `POST /v1/summarize`: replace older history with a summary. */
    summarize<M extends object = Message>(req: SummarizeRequest<M>): Promise<SummarizeResponse<M>>;
    /** `POST /v1/fit`: compact, then summarize, then window, until the history fits its target. */
    fit<M extends object = Message>(req: FitRequest<M>): Promise<FitResponse<M>>;
    /** `POST /v1/expand`: put back every offloaded original referenced in a history, byte-exact. */
    expand<M extends object = Message>(req: ExpandRequest<M>): Promise<ExpandResponse<M>>;
    /** `GET /v1/artifacts/{id}`: one offloaded original (404 `CMP_ERR_ARTIFACT_NOT_FOUND` once expired). */
    artifact(id: string): Promise<Artifact>;
    /**
     * `GET /v1/prepared/{id}`: a summary fit prepares off the request path (the `prepared.id` of a
     * fit response): its state, range and cost (404 `CMP_ERR_PREPARED_NOT_FOUND` for another key's).
     */
    prepared(id: string): Promise<PreparedSummary>;
    /** `POST /v1/tokens`: count a history's tokens as the service would. */
    tokens<M extends object = Message>(req: TokensRequest<M>): Promise<TokensResponse>;
    /** `POST /v1/validate`: check a history against its format's structural rules. */
    validate<M extends object = Message>(req: ValidateRequest<M>): Promise<ValidateResponse>;
    /**
     * `GET /health/ready` (default) or `GET /health/live`. A not-ready service's 503 is answered as
     * its status (`draining`, `store_unavailable`, …), not thrown.
     */
    health(probe?: 'ready' | 'live'): Promise<HealthStatus>;
}
