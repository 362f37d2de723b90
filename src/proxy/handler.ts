import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import pTimeout from 'p-timeout';
import { CompactorError } from '../errors.js';
import { bearerOf, digestOf } from '../plugins/app/keys.js';
import { type Caller, isStoreProblem } from '../service/artifacts.js';
import { parseJsonBytes } from '../service/request-body.js';
import { resolveModel } from '../tokens/models.js';
import { readBody } from './body.js';
import { type BypassReason, isBypassReason } from './bypass.js';
import type { ProxyContext } from './context.js';
import { saveIndex, saveState } from './conversation.js';
import { type ForwardContext, forward } from './forward.js';
import { credentialOf, headerValue } from './headers.js';
import { instantStep } from './instant.js';
import { ProxyLoad } from './load.js';
import { fitOptionsOf, requestOptions } from './options.js';
import { type CallOutcome, countOutcome, outcomeOf } from './outcome.js';
import type { Provider, Reducible } from './providers.js';
import { recordCall } from './record.js';
import { asExtended, Bypass, decide, type Extension, extend, type ReduceDeps, type Reduction } from './reduce.js';
import { windowKey } from './window.js';

/**
 * The proxy's front door: one proxied request's way through, read top to bottom in `handle` —
 * the key, the target, whether it is a model call, its body, the client's bypass, the parse, the
 * reduction within the budget, the conversation's state remembered, the forward and the usage
 * tap. Whatever goes wrong on our side, the request goes upstream as it came
 * (`x-compactor: bypass; reason=…`); errors of the proxy's own are in the provider's shape.
 */

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

/** Handles one request to `provider`'s prefix. */
export async function handle(ctx: ProxyContext, provider: Provider, request: FastifyRequest, reply: FastifyReply) {
  const started = performance.now();
  // The client sees the provider's answer: its request ids, not ours.
  reply.removeHeader('x-request-id');
  // `x-should-retry: false`, as the providers' APIs send it: the SDKs (and Claude Code) then report a 4xx instead of retrying it.
  const fail = (status: number, message: string) =>
    reply.code(status).header('x-should-retry', 'false').type('application/json').send(provider.error(status, message));
  const url = request.raw.url ?? '/';
  const rest = url.slice(provider.prefix.length) || '/';
  const [path = '/', query = ''] = rest.split('?', 2);
  // The key first: without it, a caller learns nothing, not even which proxies are on.
  const who = whoIs(ctx, provider, request, new URLSearchParams(query));
  if (!who) return fail(401, 'this Compactor needs its key: send x-compactor-key');
  // An absolute-form target (`GET http://host/…`) is what a forward proxy is sent: refused, not guessed at.
  if (!url.startsWith('/')) return fail(400, 'absolute-form request targets are not accepted: send the path only');
  const target = ctx.upstreams.url(provider.name, rest);
  if (!ctx.upstreams.base(provider.name)) return fail(404, `the ${provider.name} proxy is off on this service`);
  if (!target) return fail(400, 'the request path cannot be forwarded: it leaves the upstream base path');
  const incoming: Readable = request.body instanceof Readable ? request.body : request.raw;
  const reducible = provider.reducible(request.method, path);
  const dropped = ourBearer(ctx, request);
  const via = { ctx: forwardContext(ctx), provider, request, reply, target, modelCall: reducible !== undefined, dropped };
  const send = (
    body: Buffer | Readable | undefined,
    reduction?: Reduction,
    reason?: BypassReason,
    model?: string,
    compaction?: CallOutcome['compaction'],
  ) => {
    const plain = outcomeOf(provider.name, started, model, reduction, reason);
    const call: CallOutcome = compaction ? { ...plain, outcome: 'unchanged', compaction } : plain;
    countOutcome(ctx.metrics, call);
    ctx.report.call(call, provider.sessionOf(request.headers, {}) ?? who.owner.scope);
    const usageFor = reduction && !reducible?.countOnly ? { reduction, owner: who.owner } : undefined;
    const learn = (window: number) => ctx.windows.learn(windowKey(who.owner.scope, provider.name, model), window);
    // The conversation record (model calls, not counts): written beside the forward, never before it.
    const onUsage = reducible && !reducible.countOnly ? recordCall(ctx, who.caller, call, reduction) : undefined;
    return forward({ ...via, body, call, usageFor, onUsage, ...(reducible ? { onTooLong: learn } : {}) });
  };
  if (!reducible) return send(['GET', 'HEAD'].includes(request.method) ? undefined : incoming);
  // Weighed against the in-flight bound: without room, streamed on unread (`load`).
  const load = new ProxyLoad(ctx.app, reply);
  if (!load.announce(headerValue(request.headers, 'content-length'))) return send(incoming, undefined, 'load');
  const read = await readBody(incoming, ctx.config.COMPACTOR_BODY_LIMIT, load.admit);
  if ('overflow' in read) {
    // Forwarded unread: what it took is given back once the provider has taken the whole body (what
    // was read of it is no longer held, and it is never parsed), not when the answer ends.
    read.overflow.once('end', () => load.release()).once('close', () => load.release());
    return send(read.overflow, undefined, read.why);
  }
  const raw = read.whole;
  if (headerValue(request.headers, 'x-compactor-bypass') === '1') return send(raw, undefined, 'client');
  const json = objectOf(raw);
  if (!json) return send(raw, undefined, 'not_json');
  const model = modelOf(reducible, json);
  // Instant compaction: an agent's own compaction request answered, or passed on byte-identical (never reduced).
  const at = { path, started, model, caller: who.caller, owner: who.owner.scope };
  const instant = await instantStep(ctx, provider, reducible, request, reply, at, json);
  if (instant.kind === 'answered') return instant.sent;
  if (instant.kind === 'passed') return send(instant.body ?? raw, undefined, undefined, model, instant.compaction);
  const body = instant.body;
  const given = instant.changed ? Buffer.from(JSON.stringify(body)) : raw;
  let reduced: { reduction: Reduction; late: BypassReason | undefined };
  try {
    reduced = await reduceWithin(ctx, provider, reducible, request, body, who);
  } catch (error) {
    return send(given, undefined, reasonOf(error), model);
  }
  const { reduction, late } = reduced;
  // The agent compacts by its usage: the call as fit measured it going upstream. While the proxy
  // reduces the conversation, the agent stays under its own limit: no summary is kept for it.
  instant.roll?.(reduction.action === 'unchanged' ? reduction.tokens.before : 0);
  if (!reducible.countOnly) rememberState(ctx, who, reduction);
  const sent = reduction.history ? Buffer.from(JSON.stringify({ ...body, [reducible.history]: reduction.history })) : given;
  await send(sent, reduction, late, model);
  // Sent and answered: what was parsed and rewritten is no longer held.
  load.release();
  return reply;
}

/** The caller: Compactor's key when keys are on (null: refused), else the shared scope and the credential's owner. */
function whoIs(ctx: ProxyContext, provider: Provider, request: FastifyRequest, query: URLSearchParams): Who | null {
  const { compactor } = ctx.app;
  if (ctx.keys.on) {
    const digest = ctx.keys.check(headerValue(request.headers, 'x-compactor-key'));
    if (!digest) return null;
    const caller = compactor.caller(digest);
    return { caller, digest, owner: caller };
  }
  const credential = credentialOf(provider, request.headers, query);
  const owner = compactor.caller(credential ? digestOf(`provider-credential\0${credential}`) : null);
  return { caller: compactor.caller(null), digest: null, owner };
}

/** `authorization` when it holds one of Compactor's own keys as a bearer: never forwarded upstream. */
function ourBearer(ctx: ProxyContext, request: FastifyRequest): readonly string[] {
  if (!ctx.keys.on) return [];
  return ctx.keys.check(bearerOf(headerValue(request.headers, 'authorization'))) ? ['authorization'] : [];
}

/** The body as a JSON object, or undefined when it is not one. */
function objectOf(raw: Buffer): Record<string, unknown> | undefined {
  let body: unknown;
  try {
    body = parseJsonBytes(raw);
  } catch {
    return undefined;
  }
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
}

/** Why a reduction failed, as `x-compactor: bypass; reason=…` names it (one of `BYPASS_REASONS`, never content). */
function reasonOf(error: unknown): BypassReason {
  if (error instanceof Bypass) return error.reason;
  if (isStoreProblem(error)) return 'store';
  if (!(error instanceof CompactorError)) return 'internal';
  if (error.code.startsWith('CMP_ERR_SUMMARIZER_')) return 'summarizer';
  if (error.code === 'CMP_ERR_RATE_LIMITED') return 'overloaded';
  const reason = error.code.replace(/^CMP_ERR_/, '').toLowerCase();
  return isBypassReason(reason) ? reason : 'internal';
}

/** Resolves with the promise, or rejects with a `Bypass('budget')` after `ms`. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  pTimeout(promise, { milliseconds: ms, message: new Bypass('budget') });

/** A store write that must not hold the request: bounded, its failure logged (a code, never content). */
async function remember(ctx: ProxyContext, write: () => Promise<void>): Promise<void> {
  try {
    await within(write(), Math.max(1000, ctx.config.COMPACTOR_PROXY_BUDGET_MS));
  } catch (error) {
    ctx.app.log.warn({ reason: reasonOf(error) }, 'proxy: conversation state not stored');
  }
}

/** The conversation's new state (its owner's), and, after a reduction, which artifacts it names (the caller's). */
function rememberState(ctx: ProxyContext, who: Who, reduction: Reduction): void {
  const { artifacts } = ctx.app.compactor;
  void remember(ctx, () => saveState(artifacts, who.owner, reduction.hash, reduction.state));
  if (reduction.action === 'reduced')
    void remember(ctx, () => saveIndex(artifacts, who.caller, reduction.conversation, reduction.state.upstream));
}

/** Model of a reducible request: from its path (Gemini) or its body. */
const modelOf = (reducible: Reducible, body: Record<string, unknown>) =>
  reducible.pathModel ?? (typeof body.model === 'string' ? body.model : undefined);

/** The options with the window to fit to (`proxy/window.ts`) where the request and the table say none. */
function withWindow(
  ctx: ProxyContext,
  provider: Provider,
  reducible: Reducible,
  body: Record<string, unknown>,
  who: Who,
  options: Record<string, unknown>,
): Record<string, unknown> {
  const window = ctx.windows.windowFor(
    windowKey(who.owner.scope, provider.name, modelOf(reducible, body)),
    modelOf(reducible, body),
    options,
  );
  return window === undefined ? options : { ...options, context_window: window };
}

/** What the forwarder reaches of the proxy. */
function forwardContext(ctx: ProxyContext): ForwardContext {
  return {
    upstreams: ctx.upstreams,
    metrics: ctx.metrics,
    log: ctx.app.log,
    artifacts: ctx.app.compactor.artifacts,
    remember: (write) => void remember(ctx, write),
  };
}

/**
 * The conversation found and extended, then fit's decision, each within the budget. Past it, the
 * extension goes as it is (`late: budget`). Nothing on this path waits on a summarizer: fit's
 * `summarizer_wait: never` (the proxy's default) lets the extractive summary stand in.
 */
async function reduceWithin(
  ctx: ProxyContext,
  provider: Provider,
  reducible: Reducible,
  request: FastifyRequest,
  body: Record<string, unknown>,
  who: Who,
): Promise<{ reduction: Reduction; late: BypassReason | undefined }> {
  const { app, config } = ctx;
  const deps: ReduceDeps = {
    compactor: app.compactor,
    // The proxy forwards the provider's answer as it is: a prepared summary not queued is only logged (by the preparer).
    preparer: app.preparer,
    pool: app.workerPool,
    request,
    caller: who.caller,
    digest: who.digest,
    owner: who.owner,
    options: withWindow(
      ctx,
      provider,
      reducible,
      body,
      who,
      fitOptionsOf(requestOptions(ctx.defaults, headerValue(request.headers, 'x-compactor-options'))),
    ),
    signal: AbortSignal.timeout(config.COMPACTOR_DEADLINE_MS),
  };
  const budget = config.COMPACTOR_PROXY_BUDGET_MS;
  // The window fit measures against (the record's `tokens.window`): the options', else the model table's.
  const given = deps.options.context_window;
  const window = typeof given === 'number' ? given : (resolveModel(modelOf(reducible, body)).contextWindow ?? null);
  const x: Extension = await within(extend(deps, provider, reducible, body, request.headers), budget);
  const decision = decide(deps, reducible, body, x);
  try {
    return { reduction: { ...(await within(decision, budget)), window }, late: undefined };
  } catch (error) {
    if (!(error instanceof Bypass && error.reason === 'budget')) throw error;
    decision.catch(() => undefined);
    return { reduction: { ...asExtended(x), window }, late: 'budget' };
  }
}
