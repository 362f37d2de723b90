import type { z } from 'zod';
import type { ReasonCode } from '../contract/codes.js';
import type { ArtifactRefSchema } from '../contract/parts.js';
import type { CostReport } from '../cost/model.js';
import type { ErrorCode } from '../errors.js';
import { ExpandRequest, ExpandResponse } from '../schemas/artifacts.js';
import { McpRecallRequest, McpRecallResponse, McpSearchRequest, McpSearchResponse } from '../schemas/mcp.js';
import { STRATEGY_SCHEMAS, type StrategySchemas } from '../schemas/strategies.js';
import { TokensRequest, TokensResponse, ValidateRequest, ValidateResponse } from '../schemas/tokens.js';
import { STRATEGIES, STRATEGY_KINDS, type StrategyKind } from '../strategies/registry.js';
import { type PreparedContext, type PrepareRequest, prepares, type Strategy, type StrategyResult } from '../strategies/types.js';
import type { Caller } from './artifacts.js';
import type { Compactor } from './compactor.js';
import { type FitExtra, recordFit } from './fit-record.js';
import type { PreparedSummaries } from './prepared-summaries.js';
import { recallPage } from './recall.js';
import { checkBody } from './request-body.js';
import type { HistoryInput } from './request-history.js';
import { searchOriginals } from './search.js';
import type { StrategyResponse } from './strategy-response.js';

/** What one call runs with: its deadline and who is asking. */
export interface Call {
  readonly signal: AbortSignal;
  readonly caller: Caller;
  /** The caller's prepared summaries, where the service makes them (fit only). */
  readonly prepared?: PreparedContext | undefined;
  /**
   * Counts bytes the call will produce beyond its body (an expand's restored originals) against
   * the in-flight limit; throws 503 past it. Only where the HTTP layer admits it (the main thread).
   */
  readonly reserve?: ((bytes: number) => void) | undefined;
  /**
   * Counts characters a call loaded from the store (an MCP search's originals, a recall's) against
   * the in-flight limit, from whichever thread it runs on (a worker asks the main thread over its
   * task's port); rejects with 503 past it.
   */
  readonly weigh?: ((chars: number) => Promise<void>) | undefined;
}

/**
 * What a strategy request did, in counts and codes only (never content): the metrics and the
 * "strategy done" log line are made from it, wherever the request ran (in line or on a worker).
 */
export interface Report {
  strategy: StrategyKind;
  format: string;
  messages: number;
  applied: boolean;
  reason: ReasonCode | undefined;
  dryRun: boolean;
  tokensBefore: number;
  tokensAfter: number;
  tokensSaved: number;
  usage: StrategyResponse<unknown>['usage'];
  /** Codes of the summarizer failures the strategy recovered from. */
  summarizerFailures: ErrorCode[];
  /** Whether a summary was served from the cache; null when no summary was made. */
  summaryCached: boolean | null;
  /** Kinds of the artifacts stored on the server (inline ones excluded). */
  storedKinds: string[];
  /** What an applied reduction was priced at: the net it is expected to save over the horizon, and its summarizer's bill. */
  cost?: { unit: string; avoided: number; summarizer: number };
}

export interface Outcome {
  /** The response body, as its schema describes it. */
  value: unknown;
  report?: Report;
  /** A summary fit asks to prepare off the request path, and the prepared one it spliced in. */
  prepare?: PrepareRequest;
  spliced?: string;
  /** With `spliced`: the length of the history it was spliced into. */
  splicedAt?: number;
  /** For each output message, its input message or -1 (`StrategyResponse.sources`); strategies only. */
  sources?: number[];
}

/** The caller's prepared summaries as an operation uses them: the preparer's `context` and `after` (kept by the main thread). */
export type PreparedStore = Pick<PreparedSummaries, 'context' | 'after'>;

/**
 * Where an operation's work runs (in line or on a worker thread) with what only the main thread
 * holds: given the caller's prepared summaries, and handing the preparer what it asked for.
 */
export type Around = <R extends Pick<Outcome, 'prepare' | 'spliced'> & { value?: unknown }>(
  preparer: PreparedStore,
  scope: string,
  /** The checked body, or undefined when it is left raw for a worker thread. */
  input: unknown,
  work: (prepared: PreparedContext | undefined) => Promise<R>,
) => Promise<R>;

/** One POST endpoint's work, free of HTTP: its schemas and what it runs, typed by its body schema. */
export interface Operation<
  Body extends z.ZodType = z.ZodType,
  Response extends z.ZodType = z.ZodType,
  Url extends string = string,
> {
  readonly url: Url;
  readonly body: Body;
  readonly response: Response;
  /** A parsed body checked against `body`, typed by it; else a 400 naming each field. */
  check(raw: unknown): z.output<Body>;
  /** Runs a checked body. */
  run(compactor: Compactor, body: z.output<Body>, call: Call): Promise<Outcome>;
  /** Checks a parsed body and runs it (a worker thread's path, tests). */
  perform(compactor: Compactor, raw: unknown, call: Call): Promise<Outcome>;
  /** Runs the work of one call, where it runs, with the caller's prepared summaries if it uses them. */
  readonly around: Around;
}

/**
 * Whether a fit may use prepared summaries: not with `prepare.enabled: false` nor in a dry run,
 * so that such a call never waits for their index. A body left raw for a worker thread may.
 */
function mayPrepare(input: unknown): boolean {
  const b = input as { prepare?: { enabled?: boolean }; dry_run?: boolean } | undefined;
  return prepares(b?.prepare?.enabled, b?.dry_run, true);
}

/**
 * Fit's: the caller's prepared summaries before, and what it asked to prepare and spliced in
 * after; what could not be handed on joins the response's warnings (a response serialized on a
 * worker thread has them logged by the preparer instead).
 */
const withPrepared: Around = async (preparer, scope, input, work) => {
  const outcome = await work(mayPrepare(input) ? await preparer.context(scope) : undefined);
  const late = await preparer.after(scope, outcome);
  const value = outcome.value as { warnings?: unknown[]; prepared?: { id?: string } } | undefined;
  if (late.length === 0 || !value) return outcome;
  value.warnings?.push(...late);
  // Not queued: the response must not say it was being made (issue 39): it names no prepared summary.
  if (outcome.prepare && value.prepared?.id === outcome.prepare.id) delete value.prepared;
  return outcome;
};

/** An operation from its schemas, its work and what that needs around it (most: nothing); `perform` validates first. */
function operation<Url extends string, Body extends z.ZodType, Response extends z.ZodType>(
  url: Url,
  body: Body,
  response: Response,
  run: Operation<Body, Response>['run'],
  around: Around = (_preparer, _scope, _input, work) => work(undefined),
): Operation<Body, Response, Url> {
  const check = (raw: unknown) => checkBody(body, raw);
  return { url, body, response, check, run, perform: (compactor, raw, call) => run(compactor, check(raw), call), around };
}

type ArtifactRef = z.output<typeof ArtifactRefSchema>;

/** The strategy fields the metrics read, when a strategy has them. */
interface ReportedExtra {
  summary?: { cached?: boolean | undefined } | null | undefined;
  artifacts?: ArtifactRef[] | undefined;
  cost?: CostReport | undefined;
}

async function runStrategy<O extends z.ZodObject, E extends object, R extends StrategyResult<E>>(
  compactor: Compactor,
  kind: StrategyKind,
  strategy: Strategy<O, E, z.ZodRawShape, R>,
  request: HistoryInput & z.output<O>,
  call: Call,
): Promise<Outcome> {
  const started = performance.now();
  const answer = await compactor.run(strategy, request, request, call);
  const { extra, failure, after, sources, ...result } = answer;
  const x: ReportedExtra = extra;
  if (kind === 'fit') {
    await recordFit(
      compactor.conversations,
      call.caller,
      request,
      { ...result, ...(extra as FitExtra) },
      performance.now() - started,
    );
  }
  const dryRun = request.dry_run === true;
  const report: Report = {
    strategy: kind,
    format: result.format,
    messages: request.messages.length,
    applied: result.applied,
    reason: result.reason,
    dryRun,
    tokensBefore: result.tokens.before,
    tokensAfter: result.tokens.after,
    tokensSaved: result.tokens.saved,
    usage: result.usage,
    summarizerFailures: failure ? [failure] : [],
    summaryCached: x.summary ? x.summary.cached === true : null,
    // An artifact returned inline (with its content) was not stored.
    storedKinds: result.applied && !dryRun ? (x.artifacts ?? []).filter((a) => !('content' in a)).map((a) => a.kind) : [],
  };
  if (x.cost && result.applied) {
    const c = x.cost;
    report.cost = {
      unit: c.unit,
      avoided: c.saving_per_call * c.horizon_calls - c.rewrite_cost - c.summarizer_cost,
      summarizer: c.summarizer_cost,
    };
  }
  return { value: { ...result, ...extra }, report, sources, ...after };
}

/** What a strategy's operation runs with besides its schemas and its strategy: fit's prepared summaries. */
const AROUND: { readonly [K in StrategyKind]?: Around } = { fit: withPrepared };

type StrategyOperations = {
  [K in StrategyKind as `/v1/${K}`]: Operation<StrategySchemas<K>['request'], StrategySchemas<K>['response'], `/v1/${K}`>;
};

/** `POST /v1/{kind}` for every strategy, in the registry's order. */
function strategyOperations(): StrategyOperations {
  const entries = STRATEGY_KINDS.map((kind) => {
    const { request, response } = STRATEGY_SCHEMAS[kind];
    const strategy = STRATEGIES[kind] as Strategy<z.ZodObject, object>;
    const run = (c: Compactor, body: HistoryInput, call: Call) => runStrategy(c, kind, strategy, body, call);
    return [`/v1/${kind}`, operation(`/v1/${kind}`, request, response, run, AROUND[kind])];
  });
  return Object.fromEntries(entries) as StrategyOperations;
}

/**
 * Every POST endpoint, by URL: the routes register these entries, and a worker thread performs
 * the same ones for large bodies, so both paths validate, run and answer alike. The two `/mcp/…`
 * entries are no endpoints: they are the MCP tools' reads of originals, which `/mcp` runs on a
 * worker where the store is the worker's own.
 */
export const OPERATIONS = {
  ...strategyOperations(),
  '/v1/tokens': operation('/v1/tokens', TokensRequest, TokensResponse, async (c, body) => ({ value: c.tokens(body) })),
  '/v1/validate': operation('/v1/validate', ValidateRequest, ValidateResponse, async (c, body) => ({
    value: c.validate(body),
  })),
  '/v1/expand': operation('/v1/expand', ExpandRequest, ExpandResponse, async (c, body, call) => ({
    value: await c.expand(body, call.caller, call.reserve),
  })),
  // The MCP tools' reads of originals (not endpoints: `/mcp` runs them on a worker, `routes/mcp.ts`).
  '/mcp/search': operation('/mcp/search', McpSearchRequest, McpSearchResponse, async (c, body, call) => ({
    value: await searchOriginals(
      (caller, kinds, limit) => c.artifacts.recent(caller, kinds, limit),
      body,
      call.caller,
      call.weigh,
    ),
  })),
  '/mcp/recall': operation('/mcp/recall', McpRecallRequest, McpRecallResponse, async (c, body, call) => ({
    value: await recallPage(
      (id, caller) => c.artifact(id, caller),
      body.id,
      call.caller,
      body.offset,
      body.maxTokens,
      call.weigh,
    ),
  })),
};

export type OperationUrl = keyof typeof OPERATIONS;

export function isOperationUrl(url: string): url is OperationUrl {
  return Object.hasOwn(OPERATIONS, url);
}
