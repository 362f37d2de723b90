import { createHash, timingSafeEqual } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Config, ConfigError } from '../config.js';
import { failureError } from '../plugins/app/worker-pool.js';
import { readBody } from '../proxy/body.js';
import { saveIndex, saveState, saveUsage } from '../proxy/conversation.js';
import { clientResponseHeaders, credentialOf, headerValue, upstreamRequestHeaders } from '../proxy/headers.js';
import { type ProxyMetrics, proxyMetrics } from '../proxy/metrics.js';
import { PROVIDERS, type Provider, type Reducible } from '../proxy/providers.js';
import { asExtended, Bypass, decide, type Extension, extend, overLimit, type Reduction } from '../proxy/reduce.js';
import { Upstreams, UpstreamUnreachable } from '../proxy/upstream.js';
import { UsageTap } from '../proxy/usage-tap.js';
import type { Caller } from '../service/artifacts.js';
import { OPERATIONS, type Outcome } from '../service/operations.js';
import { parseJsonBody } from '../service/request-body.js';
import { ProxyOptions } from '../strategies/fit/options.js';
import type { PreparedContext } from '../strategies/types.js';

/**
 * The proxy routes: a drop-in base URL per provider (`/anthropic`, `/openai`, `/gemini`). A model
 * call's history is reduced on its way up (fit, cost policy, the conversation's state kept so
 * that each upstream request extends the previous one); everything else is forwarded unchanged,
 * and the provider's answer streams back untouched, its usage read from a copy. Whatever goes
 * wrong on our side, the request goes upstream as it came (`x-compactor: bypass; reason=…`).
 */

const digest = (text: string) => createHash('sha256').update(text).digest();
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** The configured fit options, checked at boot: a typo in them is refused before the service starts. */
function bootOptions(config: Config): Record<string, unknown> {
  const options = config.COMPACTOR_PROXY_OPTIONS ?? {};
  const parsed = ProxyOptions.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `invalid configuration: COMPACTOR_PROXY_OPTIONS: ${issue?.path.join('.') || '(root)'} ${issue?.message}`,
    );
  }
  return options;
}

/** A request's `x-compactor-options` over the configured ones; a bypass when it is not a JSON object of fit options. */
function requestOptions(defaults: Record<string, unknown>, header: string | undefined): Record<string, unknown> {
  if (header === undefined) return defaults;
  let value: unknown;
  try {
    value = JSON.parse(header);
  } catch {
    throw new Bypass('options');
  }
  if (!ProxyOptions.safeParse(value).success) throw new Bypass('options');
  return { ...defaults, ...(value as Record<string, unknown>) };
}

/** Resolves with the promise, or rejects with a `Bypass('budget')` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Bypass('budget')), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Why a reduction failed, as `x-compactor: bypass; reason=…` names it (a code, never content). */
function reasonOf(error: unknown): string {
  if (error instanceof Bypass) return error.reason;
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && code.includes('_STORE_')) return 'store';
  if (typeof code === 'string' && code.startsWith('CMP_ERR_')) return code.replace(/^CMP_ERR_/, '').toLowerCase();
  return 'internal';
}

interface Context {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly upstreams: Upstreams;
  readonly metrics: ProxyMetrics;
  readonly keys: Buffer[];
  readonly defaults: Record<string, unknown>;
}

/** What the proxy did, in the response headers. */
function compactorHeaders(reduction: Reduction | undefined, bypass: string | undefined): Record<string, string> {
  if (bypass)
    return {
      'x-compactor': `bypass; reason=${bypass}`,
      ...(reduction ? { 'x-compactor-conversation': reduction.conversation } : {}),
    };
  if (!reduction) return { 'x-compactor': 'passthrough' };
  const out: Record<string, string> = { 'x-compactor': reduction.action, 'x-compactor-conversation': reduction.conversation };
  if (reduction.tokens.before > 0) out['x-compactor-tokens'] = `${reduction.tokens.before}->${reduction.tokens.after}`;
  return out;
}

export default async function proxyRoutes(app: FastifyInstance, { config }: { config: Config }): Promise<void> {
  const off = (v: string) => (v === 'off' ? undefined : v);
  const upstreams = new Upstreams({
    bases: {
      anthropic: off(config.COMPACTOR_UPSTREAM_ANTHROPIC),
      openai: off(config.COMPACTOR_UPSTREAM_OPENAI),
      gemini: off(config.COMPACTOR_UPSTREAM_GEMINI),
    },
    timeoutMs: config.COMPACTOR_PROXY_TIMEOUT_MS,
    connectTimeoutMs: 10_000,
  });
  app.addHook('onClose', async () => upstreams.close());
  const ctx: Context = {
    app,
    config,
    upstreams,
    metrics: proxyMetrics(app.metrics.registry),
    keys: (config.COMPACTOR_API_KEYS ?? []).map(digest),
    defaults: bootOptions(config),
  };
  await app.register(async (scope) => {
    // Bodies are the client's, as they came: read (or streamed on) by the handler itself.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    for (const provider of Object.values(PROVIDERS)) {
      scope.route({
        method: [...METHODS],
        url: `${provider.prefix}/*`,
        schema: { hide: true },
        handler: (request, reply) => handle(ctx, provider, request, reply),
      });
    }
  });
}

/**
 * Who a proxied request speaks for. With Compactor's keys, the key owns everything. Without them
 * (one trust domain, bound to localhost), artifacts and summaries live in the service's one shared
 * scope, as `/v1` and `/mcp` see them, while the conversation's state belongs to a keyed hash of
 * the provider credential: two users of one proxy never extend each other's conversation.
 */
interface Who {
  readonly caller: Caller;
  /** The digest the caller's scope derives from (a worker thread derives the same caller from it). */
  readonly digest: Uint8Array | null;
  readonly owner: Caller;
}

function callerOf(ctx: Context, provider: Provider, request: FastifyRequest, query: URLSearchParams): Who | 'refused' {
  const { compactor } = ctx.app;
  if (ctx.keys.length > 0) {
    const given = headerValue(request.headers, 'x-compactor-key');
    if (!given) return 'refused';
    const d = digest(given);
    let ok = false;
    for (const key of ctx.keys) ok = timingSafeEqual(d, key) || ok;
    if (!ok) return 'refused';
    const caller = compactor.caller(d);
    return { caller, digest: d, owner: caller };
  }
  const credential = credentialOf(provider, request.headers, query);
  const owner = compactor.caller(credential ? digest(`provider-credential\0${credential}`) : null);
  return { caller: compactor.caller(null), digest: null, owner };
}

/**
 * Runs a fit request as the fit route does: in line, or, for a history large enough, on a worker
 * thread (judged by its bytes, as the route judges a body), so that reading, counting and
 * rewriting it never stalls the streams of other calls.
 */
function fitRunner(ctx: Context, request: FastifyRequest, who: Who) {
  return async (body: Record<string, unknown>, prepared: PreparedContext | undefined): Promise<Outcome> => {
    const { app } = ctx;
    const bytes = Buffer.from(JSON.stringify(body));
    if (!app.workerPool.accepts(bytes.length)) {
      return OPERATIONS['/v1/fit'].perform(app.compactor, body, {
        signal: AbortSignal.timeout(ctx.config.COMPACTOR_DEADLINE_MS),
        caller: who.caller,
        prepared,
      });
    }
    const result = await app.workerPool.run('/v1/fit', bytes, request, prepared, who.digest);
    if (!result.ok) throw failureError(result);
    const payload = Buffer.from(result.payload.buffer, result.payload.byteOffset, result.payload.byteLength);
    return {
      value: JSON.parse(payload.toString('utf8')) as unknown,
      ...(result.report ? { report: result.report } : {}),
      ...(result.prepare ? { prepare: result.prepare } : {}),
      ...(result.spliced ? { spliced: result.spliced } : {}),
      ...(result.sources ? { sources: result.sources } : {}),
    };
  };
}

async function handle(ctx: Context, provider: Provider, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  // The client sees the provider's answer: its request ids, not ours.
  reply.removeHeader('x-request-id');
  const fail = (status: number, message: string, headers: Record<string, string> = {}) =>
    reply.code(status).headers(headers).type('application/json').send(provider.error(status, message));
  const rest = (request.raw.url ?? '/').slice(provider.prefix.length) || '/';
  const [path = '/', query = ''] = rest.split('?', 2);
  // The key first: without it, a caller learns nothing, not even which proxies are on.
  const who = callerOf(ctx, provider, request, new URLSearchParams(query));
  if (who === 'refused') return fail(401, 'this Compactor needs its key: send x-compactor-key');
  const target = ctx.upstreams.url(provider.name, rest);
  if (!ctx.upstreams.base(provider.name)) return fail(404, `the ${provider.name} proxy is off on this service`);
  if (!target) return fail(400, 'the request path cannot be forwarded');
  const incoming: Readable = request.body instanceof Readable ? request.body : request.raw;
  const hasBody = !['GET', 'HEAD'].includes(request.method);
  const reducible = provider.reducible(request.method, path);
  if (!reducible) {
    ctx.metrics.requests.inc({ provider: provider.name, outcome: 'passthrough' });
    return forward(
      ctx,
      provider,
      request,
      reply,
      target,
      hasBody ? incoming : undefined,
      undefined,
      compactorHeaders(undefined, undefined),
      undefined,
    );
  }
  const read = await readBody(incoming, ctx.config.COMPACTOR_BODY_LIMIT);
  const bypass = (reason: string, body: Buffer | Readable, reduction?: Reduction) => {
    ctx.metrics.requests.inc({ provider: provider.name, outcome: 'bypass' });
    ctx.metrics.bypasses.inc({ provider: provider.name, reason });
    return forward(ctx, provider, request, reply, target, body, reducible, compactorHeaders(reduction, reason), undefined);
  };
  if ('overflow' in read) return bypass('too_large', read.overflow);
  const raw = read.whole;
  if (headerValue(request.headers, 'x-compactor-bypass') === '1') return bypass('client', raw);
  let body: unknown;
  try {
    body = parseJsonBody(raw.toString('utf8'));
  } catch {
    return bypass('not_json', raw);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bypass('not_json', raw);
  const json = body as Record<string, unknown>;
  let reduction: Reduction;
  let late: string | undefined;
  try {
    ({ reduction, late } = await reduceWithin(ctx, provider, reducible, request, json, who));
  } catch (error) {
    return bypass(reasonOf(error), raw);
  }
  const sent = reduction.history ? Buffer.from(JSON.stringify({ ...json, [reducible.history]: reduction.history })) : raw;
  ctx.metrics.requests.inc({ provider: provider.name, outcome: late ? 'bypass' : reduction.action });
  if (late) ctx.metrics.bypasses.inc({ provider: provider.name, reason: late });
  if (reduction.action === 'reduced')
    ctx.metrics.tokensSaved.inc({ provider: provider.name }, Math.max(0, reduction.tokens.saved));
  if (reduction.prefixBreak) ctx.metrics.prefixBreaks.inc({ provider: provider.name });
  const record = reducible.countOnly ? undefined : { reduction, owner: who.owner };
  if (record)
    void remember(ctx, () => saveState(ctx.app.store, who.owner, reduction.hash, reduction.state, ttl(ctx), Date.now()));
  if (record && reduction.action === 'reduced') {
    const { conversation, state } = reduction;
    void remember(ctx, () => saveIndex(ctx.app.store, who.caller, conversation, state.upstream, ttl(ctx), Date.now()));
  }
  return forward(ctx, provider, request, reply, target, sent, reducible, compactorHeaders(reduction, late), record);
}

const ttl = (ctx: Context) => ctx.config.COMPACTOR_ARTIFACT_TTL_SECONDS;

/** A store write that must not hold the request: bounded, its failure logged (a code, never content). */
async function remember(ctx: Context, write: () => Promise<void>): Promise<void> {
  try {
    await within(write(), Math.max(1000, ctx.config.COMPACTOR_PROXY_BUDGET_MS));
  } catch (error) {
    ctx.app.log.warn({ reason: reasonOf(error) }, 'proxy: conversation state not stored');
  }
}

/**
 * The conversation found and extended, then fit's decision, each within the budget. Past it, the
 * extension goes as it is (`late: budget`), unless it is over the limit: a forced reduction may
 * then take a summarizer call's time more, since the call could not succeed as it is.
 */
async function reduceWithin(
  ctx: Context,
  provider: Provider,
  reducible: Reducible,
  request: FastifyRequest,
  body: Record<string, unknown>,
  who: Who,
): Promise<{ reduction: Reduction; late: string | undefined }> {
  const { app, config } = ctx;
  const { caller } = who;
  const options = requestOptions(ctx.defaults, headerValue(request.headers, 'x-compactor-options'));
  const deps = {
    compactor: app.compactor,
    store: app.store,
    caller,
    owner: who.owner,
    // The proxy forwards the provider's answer as it is: a prepared summary not queued is only logged (by the preparer).
    preparer: app.preparer,
    options,
    signal: AbortSignal.timeout(config.COMPACTOR_DEADLINE_MS),
    now: Date.now,
    runFit: fitRunner(ctx, request, who),
  };
  const budget = config.COMPACTOR_PROXY_BUDGET_MS;
  const x: Extension = await within(extend(deps, provider, reducible, body, request.headers), budget);
  const decision = decide(deps, reducible, body, x);
  try {
    return { reduction: await within(decision, budget), late: undefined };
  } catch (error) {
    if (!(error instanceof Bypass && error.reason === 'budget')) throw error;
    if (overLimit(app.compactor, reducible, body, x, options)) {
      try {
        return { reduction: await within(decision, config.COMPACTOR_SUMMARIZER_TIMEOUT_MS), late: undefined };
      } catch {
        // Still nothing: the extension goes as it is.
      }
    }
    decision.catch(() => undefined);
    return { reduction: asExtended(x), late: 'budget' };
  }
}

/**
 * Sends the request upstream and the answer back: status, headers (hop-by-hop ones aside) and body
 * as they come, streamed chunk by chunk; a copy of a model call's answer is read for its usage.
 * A client that disconnects aborts the upstream request; an upstream that cannot be reached is a
 * 502 in the provider's own error shape.
 */
async function forward(
  ctx: Context,
  provider: Provider,
  request: FastifyRequest,
  reply: FastifyReply,
  target: URL,
  body: Buffer | Readable | undefined,
  reducible: Reducible | undefined,
  headers: Record<string, string>,
  record: { reduction: Reduction; owner: Caller } | undefined,
): Promise<FastifyReply> {
  // A model call's answer is read for its usage: asked for uncompressed.
  const set: Record<string, string> = reducible ? { 'accept-encoding': 'identity' } : {};
  const length = headerValue(request.headers, 'content-length');
  if (Buffer.isBuffer(body)) set['content-length'] = String(body.length);
  else if (body && length) set['content-length'] = length;
  const abort = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  // A client that left while its request was reduced: its `close` has passed; nothing goes upstream.
  if (reply.raw.destroyed) abort.abort();
  const started = performance.now();
  let answer: Awaited<ReturnType<Upstreams['send']>>;
  try {
    answer = await ctx.upstreams.send(target, request.method, upstreamRequestHeaders(request.headers, set), body, abort.signal);
  } catch (error) {
    if (abort.signal.aborted) return reply;
    ctx.metrics.requests.inc({ provider: provider.name, outcome: 'upstream_error' });
    const kind = error instanceof UpstreamUnreachable ? error.kind : 'connect';
    ctx.app.log.warn({ provider: provider.name, kind }, 'proxy: upstream unreachable');
    return reply
      .code(502)
      .headers(headers)
      .type('application/json')
      .send(provider.error(502, `the ${provider.name} upstream could not be reached (${kind})`));
  }
  ctx.metrics.upstreamSeconds.observe({ provider: provider.name }, (performance.now() - started) / 1000);
  reply.code(answer.status);
  for (const [name, value] of Object.entries(clientResponseHeaders(answer.headers))) reply.header(name, value);
  reply.headers(headers);
  if (record && answer.status >= 200 && answer.status < 300) tapUsage(ctx, provider, answer, record);
  return reply.send(answer.body);
}

/** Reads the answer's usage from a copy of its bytes and records it against the conversation. */
function tapUsage(
  ctx: Context,
  provider: Provider,
  answer: Awaited<ReturnType<Upstreams['send']>>,
  record: { reduction: Reduction; owner: Caller },
): void {
  const encoding = String(answer.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') return;
  const tap = new UsageTap(String(answer.headers['content-type'] ?? '').includes('text/event-stream'));
  answer.body.on('data', (chunk: Uint8Array) => tap.write(chunk));
  answer.body.once('end', () => {
    const usage = tap.end();
    ctx.metrics.usageRead.inc({ provider: provider.name, found: usage ? 'yes' : 'no' });
    if (!usage) return;
    const { reduction, owner } = record;
    void remember(ctx, () =>
      saveUsage(ctx.app.store, owner, reduction.hash, { usage, covered: reduction.covers }, ttl(ctx), Date.now()),
    );
  });
}
