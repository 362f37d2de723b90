"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CompactorClient = exports.CompactorHttpError = void 0;
/** An answer with a 4xx/5xx status, carrying the problem document the service sent. */
class CompactorHttpError extends Error {
    status;
    problem;
    retryAfterSeconds;
    name = 'CompactorHttpError';
    constructor(status, 
    /** The problem document; undefined when the body was not JSON (a proxy's page, say). */
    problem, 
    /** The service's `retry-after` on a 429 or 503, in seconds. */
    retryAfterSeconds) {
        super(problem?.code ? `${problem.code}: ${problem.detail}` : `HTTP ${status}`);
        this.status = status;
        this.problem = problem;
        this.retryAfterSeconds = retryAfterSeconds;
    }
}
exports.CompactorHttpError = CompactorHttpError;
function parseBody(text) {
    if (!text)
        return undefined;
    try {
        return JSON.parse(text);
    }
    catch {
        return undefined;
    }
}
/**
 * A client for every endpoint of Compactor's API, version 1. Each method throws
 * `CompactorHttpError` on a 4xx/5xx answer (after the retries a `retry-after` allows), and the
 * `fetch` error (a `TimeoutError` past `timeoutMs`, a `TypeError` when nothing answers) otherwise.
 */
class CompactorClient {
    options;
    base;
    doFetch;
    constructor(options) {
        this.options = options;
        this.base = options.baseUrl.replace(/\/+$/, '');
        this.doFetch = options.fetch ?? globalThis.fetch;
    }
    async call(method, path, body, accept) {
        const deadline = Date.now() + (this.options.timeoutMs ?? 60_000);
        const payload = body !== undefined ? JSON.stringify(body) : undefined;
        for (let attempt = 0;; attempt++) {
            try {
                return await this.once(method, path, payload, deadline, accept);
            }
            catch (error) {
                const wait = error instanceof CompactorHttpError ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
                if (!wait || attempt >= (this.options.retries ?? 2) || Date.now() + wait >= deadline)
                    throw error;
                await new Promise((resolve) => setTimeout(resolve, wait));
            }
        }
    }
    async once(method, path, payload, deadline, accept) {
        const headers = { accept: 'application/json, application/problem+json' };
        if (payload !== undefined)
            headers['content-type'] = 'application/json';
        if (this.options.apiKey)
            headers.authorization = `Bearer ${this.options.apiKey}`;
        const res = await this.doFetch(`${this.base}${path}`, {
            method,
            headers,
            ...(payload !== undefined ? { body: payload } : {}),
            signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
        });
        const parsed = parseBody(await res.text());
        if (!res.ok && !accept?.(res.status)) {
            const after = Number(res.headers.get('retry-after'));
            const retryable = (res.status === 429 || res.status === 503) && Number.isFinite(after) && after > 0;
            const problem = parsed && typeof parsed === 'object' ? parsed : undefined;
            throw new CompactorHttpError(res.status, problem, retryable ? after : undefined);
        }
        return parsed;
    }
    /** `POST /v1/window`: keep the newest runs, messages or tokens; drop the rest. */
    window(req) {
        return this.call('POST', '/v1/window', req);
    }
    /** `POST /v1/compact`: clear, offload, truncate and dedupe old tool traffic and thinking (reversible). */
    compact(req) {
        return this.call('POST', '/v1/compact', req);
    }
    /** `POST /v1/summarize`: replace older history with a summary. */
    summarize(req) {
        return this.call('POST', '/v1/summarize', req);
    }
    /** `POST /v1/fit`: compact, then summarize, then window, until the history fits its target. */
    fit(req) {
        return this.call('POST', '/v1/fit', req);
    }
    /** `POST /v1/expand`: put back every offloaded original referenced in a history, byte-exact. */
    expand(req) {
        return this.call('POST', '/v1/expand', req);
    }
    /** `GET /v1/artifacts/{id}`: one offloaded original (404 `CMP_ERR_ARTIFACT_NOT_FOUND` once expired). */
    artifact(id) {
        return this.call('GET', `/v1/artifacts/${encodeURIComponent(id)}`);
    }
    /**
     * `GET /v1/prepared/{id}`: a summary fit prepares off the request path (the `prepared.id` of a
     * fit response): its state, range and cost (404 `CMP_ERR_PREPARED_NOT_FOUND` for another key's).
     */
    prepared(id) {
        return this.call('GET', `/v1/prepared/${encodeURIComponent(id)}`);
    }
    /** `POST /v1/tokens`: count a history's tokens as the service would. */
    tokens(req) {
        return this.call('POST', '/v1/tokens', req);
    }
    /** `POST /v1/validate`: check a history against its format's structural rules. */
    validate(req) {
        return this.call('POST', '/v1/validate', req);
    }
    /**
     * `GET /health/ready` (default) or `GET /health/live`. A not-ready service's 503 is answered as
     * its status (`draining`, `store_unavailable`, …), not thrown.
     */
    health(probe = 'ready') {
        return this.call('GET', `/health/${probe}`, undefined, (status) => status === 503);
    }
}
exports.CompactorClient = CompactorClient;
