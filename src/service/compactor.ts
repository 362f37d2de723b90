import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type { Prices } from '../cost/prices.js';
import { PriceTable } from '../cost/prices.js';
import { CompactorError } from '../errors.js';
import { addresser, scopeOf } from '../history/address.js';
import type { ExpandResult } from '../history/expand.js';
import type { FormatAdapter } from '../history/format.js';
import { checkDepth } from '../history/limits.js';
import { markers } from '../history/markers.js';
import { applyPlan } from '../history/plan/apply.js';
import { evaluatePlan } from '../history/plan/evaluate.js';
import { offeredRecallTool } from '../history/recall-tool.js';
import type { Violation, Warning } from '../history/types.js';
import type { ArtifactStore } from '../store/types.js';
import { countWith, type PreparedContext, type Strategy, type StrategyResult, withTotal } from '../strategies/types.js';
import { ExtractiveSummarizer } from '../summarizers/extractive.js';
import { SingleFlight } from '../summarizers/single-flight.js';
import type { SettledSummary, Summarizer } from '../summarizers/types.js';
import type { TokenCounter } from '../tokens/counter.js';
import { usageScale } from '../tokens/occupancy.js';
import { ArtifactService, type ArtifactView, type Caller } from './artifacts.js';
import { ConversationService } from './conversations.js';
import { billOnce, offeredPrepared } from './prepared-run.js';
import { checkParallel, type HistoryInput, parseHistory, prepareRequest, triggered } from './request-history.js';
import { answers, beyond, type StrategyResponse, splicedOf } from './strategy-response.js';

/** Logs what happened, never what was said: counts, codes and rule names only. */
export interface CompactorLogger {
  error(obj: Record<string, unknown>, msg: string): void;
}

export interface CompactorOptions {
  /** The summarizer strategies use (default: the extractive one). */
  summarizer?: Summarizer;
  /** Where offloaded originals live; without one, `store: "server"` answers 503. */
  store?: ArtifactStore;
  /** How long offloaded originals live (default 7 days). */
  artifactTtlSeconds?: number;
  /** Most bytes of originals one expand restores (`COMPACTOR_EXPAND_MAX_BYTES`); 0 or unset: no cap. */
  expandMaxBytes?: number;
  logger?: CompactorLogger;
  /** The clock, in milliseconds since the epoch. */
  now?: () => number;
  /**
   * The installation secret that keys artifact ids and scopes (`store.secret()` gives the one the
   * store keeps). Default: random, so ids and cached summaries last as long as this instance.
   */
  secret?: string;
  /** Model prices (the built-in table plus COMPACTOR_PRICES_FILE's rows). */
  prices?: PriceTable;
  /** The summarizer's prices when configured (COMPACTOR_SUMMARIZER_PRICING). */
  summarizerPrices?: Prices;
}

/** Scopes whose callers are kept (`Compactor.callerOfScope`): about 2 KiB each. */
const CALLERS_KEPT = 256;

/** Per call: its deadline and who is asking (default: the shared scope of a service without keys). */
export interface RunOptions {
  signal?: AbortSignal | undefined;
  caller?: Caller | undefined;
  /** The caller's prepared summaries, where the service makes them (fit prepares and splices only then). */
  prepared?: PreparedContext | undefined;
}

/**
 * The service core, free of HTTP: reads a request's history (detect, parse, check, count), runs a
 * strategy, validates what it produced and reports tokens and actions. Routes call into it.
 */
export class Compactor {
  /** Offloaded originals: persistence, expand, recall. */
  readonly artifacts: ArtifactService;
  /** The conversation record: one entry per model call (`GET /v1/conversations`, `/ui`). */
  readonly conversations: ConversationService;
  private readonly summarizer: Summarizer;
  /** Identical summaries in flight at once share one summarizer call. */
  private readonly flights = new SingleFlight<SettledSummary>();
  private readonly secret: string;
  private readonly shared: Caller;
  private readonly prices: PriceTable;
  /**
   * Callers by scope, oldest first: a caller holds no state of its own, only the keys derived from
   * the secret and its scope (two HMACs, about 0.2 ms a request when derived each time, issue 40).
   */
  private readonly callers = new Map<string, Caller>();

  constructor(
    /** The count cache (its statistics reach the metrics). */
    readonly counter: TokenCounter,
    private readonly options: CompactorOptions = {},
  ) {
    this.summarizer = options.summarizer ?? new ExtractiveSummarizer();
    this.prices = options.prices ?? new PriceTable();
    this.secret = options.secret ?? randomBytes(32).toString('hex');
    this.shared = this.caller(null);
    this.artifacts = new ArtifactService({
      store: options.store,
      ttlSeconds: options.artifactTtlSeconds ?? 7 * 24 * 3600,
      expandMaxBytes: options.expandMaxBytes ?? 0,
      logger: options.logger,
      now: options.now ?? Date.now,
    });
    this.conversations = new ConversationService({
      artifacts: this.artifacts,
      prices: this.prices,
      now: options.now ?? Date.now,
    });
  }

  /**
   * The caller a request speaks for: its scope, from the SHA-256 digest of its validated API key
   * (null when no keys are configured: the one shared scope), the addresser of its ids and the
   * signer of its markers.
   */
  caller(keyDigest: Uint8Array | null | undefined): Caller {
    return this.callerOfScope(scopeOf(this.secret, keyDigest));
  }

  /** The caller of a scope `caller` derived before (a background job runs as the caller who asked for it). */
  callerOfScope(scope: string): Caller {
    const known = this.callers.get(scope);
    if (known) return known;
    const caller: Caller = { scope, address: addresser(this.secret, scope), markers: markers(this.secret, scope) };
    if (this.callers.size >= CALLERS_KEPT) this.callers.delete(this.callers.keys().next().value as string);
    this.callers.set(scope, caller);
    return caller;
  }

  /**
   * `/v1/expand`: restores every placeholder whose artifact is known, from the caller's store or
   * from the request's own `artifacts` (what `store: "inline"` returned), and names the ones that are not.
   * An inline `content` nested deeper than `MAX_DEPTH` is a 400 `CMP_ERR_REQUEST_TOO_DEEP` naming
   * it: it is hashed and restored, both recursive (no original the service returned is that deep).
   * `reserve` counts the bytes it restores against the in-flight limit (where the HTTP layer has one).
   */
  async expand(
    req: {
      messages: unknown[];
      format?: string | undefined;
      artifacts?: { id: string; content?: unknown }[] | undefined;
    },
    caller: Caller = this.shared,
    reserve?: (bytes: number) => void,
  ): Promise<ExpandResult & { format: string }> {
    const { format } = parseHistory(req);
    req.artifacts?.forEach((a, i) => {
      checkDepth(a.content, `artifacts[${i}].content`);
    });
    return { ...(await this.artifacts.expand(caller, format, req.messages, req.artifacts, reserve)), format: format.name };
  }

  /** `GET /v1/artifacts/{id}`: one of the caller's originals; 404 when unknown, expired or another's. */
  artifact(id: string, caller: Caller = this.shared): Promise<ArtifactView> {
    return this.artifacts.get(caller, id);
  }

  /** The structural-rule check of `/v1/validate`: violations are reported, not thrown; bad request fields are a 400. */
  validate(req: HistoryInput): { valid: boolean; format: string; violations: Violation[]; warnings: Warning[] } {
    const { format, items, warnings } = parseHistory(req);
    checkParallel(req, items.length);
    const violations = format.violations(items);
    return { valid: violations.length === 0, format: format.name, violations, warnings };
  }

  /** `/v1/tokens`: counts per message and in total, as the strategies count them. */
  tokens(req: HistoryInput) {
    const h = prepareRequest(req, this.counter);
    return {
      total: h.total,
      messages: [...h.counts],
      system: h.system,
      tools: h.tools,
      occupancy: h.occupancy,
      counting: h.counting,
      tokenizer: h.profile.tokenizer,
      format: h.format.name,
      context_window: h.profile.contextWindow ?? null,
    };
  }

  /**
   * Runs a strategy: trigger check, the strategy itself, then the format's rules over its output.
   * An output that breaks a rule is never returned (500 `CMP_ERR_INTERNAL_INVALID_OUTPUT`).
   */
  async run<O extends z.ZodObject, E, R extends StrategyResult<E>>(
    strategy: Strategy<O, E, z.ZodRawShape, R>,
    req: HistoryInput,
    options: z.output<O>,
    call: RunOptions = {},
  ): Promise<StrategyResponse<E, R>> {
    const { signal } = call;
    const caller = call.caller ?? this.shared;
    const h = prepareRequest(req, this.counter);
    const { prepared, warnings: offline } = offeredPrepared(call.prepared, options, req.dry_run === true);
    const early = offline.length > 0 ? [...h.warnings, ...offline] : h.warnings;
    const { tokens, unchanged } = answers<E, R>(h, req);
    strategy.check?.(options, { profile: h.profile, summarizer: this.summarizer });
    const cost = {
      table: this.prices,
      summarizerPrices: this.options.summarizerPrices,
      usage: req.usage,
      fixed: h.system + h.tools + h.format.framing.perRequest,
      model: req.model,
      markers: caller.markers,
    };
    if (!triggered(req, h)) return unchanged('below_trigger', early, strategy.idle(h, options, cost));

    const dryRun = req.dry_run === true;
    const out = await strategy.run(h, options, {
      counter: this.counter,
      profile: h.profile,
      address: caller.address,
      // Hints name the recall tool the request offers (or the caller names), else the artifact plainly.
      markers: caller.markers.withRecallTool(req.recall_tool ?? offeredRecallTool(h, req.tools, req.system)),
      summarizer: this.summarizer,
      flights: this.flights,
      recall: (ids) => this.artifacts.recall(caller, ids),
      dryRun,
      cost,
      ...(signal ? { signal } : {}),
      ...(prepared ? { prepared } : {}),
    });
    const internal = { ...(out.failure ? { failure: out.failure } : {}), after: beyond(out) };
    const billed = await billOnce(this.artifacts, caller, out.usage, splicedOf(internal.after));
    const warnings = [
      ...early,
      ...out.warnings,
      ...billed.warnings,
      ...(dryRun ? [] : await this.cacheQuietly(caller, out.bestEffort)),
    ];
    // Not response fields: the failure the metrics count, and what the strategy asks of the service.
    if (out.reason || !out.plan)
      return { ...unchanged(out.reason ?? 'nothing_to_reduce', warnings, out.extra(undefined), billed.usage), ...internal };
    // With the strategy's own counter: a plan it already rendered on `h` is not rendered again.
    const applied = applyPlan(h, out.plan, countWith(h, { counter: this.counter, profile: h.profile }));
    this.checkOutput(strategy.kind, h.format, applied.messages);
    if (!dryRun) await this.artifacts.persist(caller, applied.offload);
    // Counted by Compactor; the occupancy may be the usage's (another tokenizer): saved in its units.
    const scale = usageScale(h.occupancy, h.total);
    const counted = Math.max(0, evaluatePlan(out.plan, applied).saved);
    const saved = scale === 1 ? counted : Math.min(h.occupancy, Math.round(counted * scale));
    return {
      messages: dryRun ? req.messages : applied.messages,
      format: h.format.name,
      applied: !dryRun,
      ...(dryRun ? { reason: 'dry_run' } : {}),
      tokens: tokens(saved),
      usage: withTotal(billed.usage),
      actions: applied.actions,
      warnings,
      sources: dryRun ? req.messages.map((_, i) => i) : applied.sources,
      ...(out.fallback ? { fallback: out.fallback } : {}),
      ...internal,
      extra: out.extra(applied, billed.usage),
    };
  }

  /** Writes the summary-cache entries a strategy made, if the store answers; a warning when it does not. */
  private async cacheQuietly(caller: Caller, entries: StrategyResult<unknown>['bestEffort']): Promise<Warning[]> {
    if (!entries || !(await this.artifacts.persistQuietly(caller, entries))) return [];
    return [{ code: 'cache_not_written', message: 'the summary cache could not be written: the store did not answer' }];
  }

  private checkOutput(kind: string, format: FormatAdapter, messages: readonly unknown[]): void {
    const violations = format.violations(format.parse(messages).items);
    if (violations.length === 0) return;
    this.options.logger?.error(
      { strategy: kind, format: format.name, rules: violations.map((v) => `${v.index}:${v.rule}`) },
      'strategy output broke a structural rule',
    );
    throw new CompactorError('CMP_ERR_INTERNAL_INVALID_OUTPUT', 'the strategy produced an invalid history; nothing was returned');
  }
}
