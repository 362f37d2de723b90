import type { z } from 'zod';
import type { Caller } from './artifacts.js';
import type { Compactor, StrategyResponse } from './compactor.js';
import type { ReasonCode } from './contract/codes.js';
import type { ArtifactRefSchema } from './contract/parts.js';
import type { CostReport } from './cost/model.js';
import type { ErrorCode } from './errors.js';
import { ExpandRequest, ExpandResponse } from './schemas/artifacts.js';
import { STRATEGY_SCHEMAS } from './schemas/strategies.js';
import { TokensRequest, TokensResponse, ValidateRequest, ValidateResponse } from './schemas/tokens.js';
import { STRATEGIES, type StrategyKind } from './strategies/registry.js';

/** What one call runs with: its deadline and who is asking. */
export interface Call {
  readonly signal: AbortSignal;
  readonly caller: Caller;
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
}

/** One POST endpoint's work, free of HTTP: its schemas and what it runs. */
export interface Operation {
  readonly url: string;
  readonly body: z.ZodType;
  readonly response: z.ZodType;
  run(compactor: Compactor, body: never, call: Call): Promise<Outcome>;
}

type ArtifactRef = z.output<typeof ArtifactRefSchema>;

async function runStrategy(compactor: Compactor, kind: StrategyKind, body: never, call: Call): Promise<Outcome> {
  const strategy = STRATEGIES[kind] as (typeof STRATEGIES)['window'];
  const request = body as Parameters<Compactor['run']>[1] & { messages: unknown[] };
  const answer = await compactor.run(strategy, request, body, call);
  const { extra, failure, ...result } = answer;
  const x = extra as { summary?: { cached?: boolean } | null; artifacts?: ArtifactRef[]; cost?: CostReport };
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
  return { value: { ...result, ...extra }, report };
}

/** `/v1/{kind}` for each strategy of the registry. */
export type StrategyUrl = `/v1/${StrategyKind}`;

export const strategyUrl = (kind: StrategyKind): StrategyUrl => `/v1/${kind}`;

const STRATEGY_OPERATIONS = Object.fromEntries(
  (Object.keys(STRATEGIES) as StrategyKind[]).map((kind): [StrategyUrl, Operation] => [
    strategyUrl(kind),
    {
      url: strategyUrl(kind),
      body: STRATEGY_SCHEMAS[kind].request,
      response: STRATEGY_SCHEMAS[kind].response,
      run: (compactor, request, call) => runStrategy(compactor, kind, request, call),
    },
  ]),
) as Record<StrategyUrl, Operation>;

/**
 * Every POST endpoint, by URL: the routes are registered from this table, and a worker thread
 * runs the same entries for large bodies, so both paths validate, run and answer alike.
 */
export type OperationUrl = StrategyUrl | '/v1/tokens' | '/v1/validate' | '/v1/expand';

export const OPERATIONS: Readonly<Record<OperationUrl, Operation>> = {
  ...STRATEGY_OPERATIONS,
  '/v1/tokens': {
    url: '/v1/tokens',
    body: TokensRequest,
    response: TokensResponse,
    run: async (compactor, body) => ({ value: compactor.tokens(body as Parameters<Compactor['tokens']>[0]) }),
  },
  '/v1/validate': {
    url: '/v1/validate',
    body: ValidateRequest,
    response: ValidateResponse,
    run: async (compactor, body) => ({ value: compactor.validate(body as Parameters<Compactor['validate']>[0]) }),
  },
  '/v1/expand': {
    url: '/v1/expand',
    body: ExpandRequest,
    response: ExpandResponse,
    run: async (compactor, body, call) => ({
      value: await compactor.expand(body as Parameters<Compactor['expand']>[0], call.caller),
    }),
  },
};

export function isOperationUrl(url: string): url is OperationUrl {
  return Object.hasOwn(OPERATIONS, url);
}
