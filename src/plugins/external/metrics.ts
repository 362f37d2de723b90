import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Report } from '../../service/operations.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What a strategy request did (counts and codes), for the metrics and the log line. */
    report: Report | undefined;
    /** The code of the problem the request was answered with, if any. */
    problemCode: string | undefined;
  }
  interface FastifyInstance {
    /** The app's own registry: other plugins register their metrics on it. */
    metrics: { registry: Registry };
  }
}

/** What strategy requests did, as counters. */
function strategyCounters(registry: Registry) {
  const registers = [registry];
  return {
    tokensSaved: new Counter({
      name: 'compactor_tokens_saved_total',
      help: 'Tokens removed from histories, by strategy',
      labelNames: ['strategy'],
      registers,
    }),
    billedTokens: new Counter({
      name: 'compactor_billed_tokens_total',
      help: 'Tokens billed by the summarizer, by model and kind (input, output, cached_input)',
      labelNames: ['model', 'kind'],
      registers,
    }),
    summarizerErrors: new Counter({
      name: 'compactor_summarizer_errors_total',
      help: 'Summaries that failed, by error code',
      labelNames: ['code'],
      registers,
    }),
    storeErrors: new Counter({
      name: 'compactor_store_errors_total',
      help: 'Requests answered with a store problem (CMP_ERR_STORE_UNAVAILABLE, CMP_ERR_STORE_FAILED, CMP_ERR_STORE_ARTIFACT_TOO_LARGE), by code',
      labelNames: ['code'],
      registers,
    }),
    summaryCache: new Counter({
      name: 'compactor_summary_cache_total',
      help: 'Summaries served from the cache (hit) or written (miss)',
      labelNames: ['result'],
      registers,
    }),
    artifactsStored: new Counter({
      name: 'compactor_artifacts_total',
      help: 'Originals offloaded as artifacts, by kind',
      labelNames: ['kind'],
      registers,
    }),
    spendAvoided: new Counter({
      name: 'compactor_estimated_spend_avoided_total',
      help: 'Estimated provider spend avoided by applied reductions (their saving over the expected remaining calls, net of the cache rewrite and the summarizer), by unit (a currency or relative)',
      labelNames: ['unit'],
      registers,
    }),
    summarizerSpend: new Counter({
      name: 'compactor_summarizer_spend_total',
      help: 'Estimated spend on summarizer calls of applied reductions priced with the cost fields, by unit',
      labelNames: ['unit'],
      registers,
    }),
  };
}

type StrategyCounters = ReturnType<typeof strategyCounters>;

/** Counts what one strategy request did. */
function count(counters: StrategyCounters, report: Report): void {
  if (report.applied) counters.tokensSaved.inc({ strategy: report.strategy }, report.tokensSaved);
  const { usage } = report;
  if (usage.calls > 0) {
    const model = usage.model ?? 'none';
    counters.billedTokens.inc({ model, kind: 'input' }, usage.input_tokens);
    counters.billedTokens.inc({ model, kind: 'output' }, usage.output_tokens);
    counters.billedTokens.inc({ model, kind: 'cached_input' }, usage.cached_input_tokens);
  }
  for (const code of report.summarizerFailures) counters.summarizerErrors.inc({ code });
  if (report.summaryCached !== null) counters.summaryCache.inc({ result: report.summaryCached ? 'hit' : 'miss' });
  for (const kind of report.storedKinds) counters.artifactsStored.inc({ kind });
  if (report.cost) {
    // A counter only goes up: a reduction that was forced at a loss adds nothing to what was avoided.
    if (report.cost.avoided > 0) counters.spendAvoided.inc({ unit: report.cost.unit }, report.cost.avoided);
    if (report.cost.summarizer > 0) counters.summarizerSpend.inc({ unit: report.cost.unit }, report.cost.summarizer);
  }
}

/** The "strategy done" log line: counts and codes only, never message content, prompts or keys. */
function logReport(request: FastifyRequest, reply: FastifyReply, report: Report): void {
  request.log.info(
    {
      strategy: report.strategy,
      format: report.format,
      messages: report.messages,
      applied: report.applied,
      reason: report.reason,
      tokens_before: report.tokensBefore,
      tokens_after: report.tokensAfter,
      billed_tokens: report.usage.total_tokens,
      billed_model: report.usage.model,
      duration_ms: Math.round(reply.elapsedTime),
    },
    'strategy done',
  );
}

/**
 * Prometheus metrics on a registry of this app's own (so several apps in one process, as in the
 * tests, do not collide): request counts and durations by route and status, tokens saved by
 * strategy, tokens billed by model, summarizer errors by kind, summary cache hits, artifacts
 * offloaded, and the process defaults; the other plugins add theirs (token count cache, queue,
 * admission, workers, store).
 */
export default fp(
  async (app: FastifyInstance) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const labelNames = ['method', 'route', 'status'] as const;
    const requests = new Counter({
      name: 'compactor_http_requests_total',
      help: 'HTTP requests',
      labelNames,
      registers: [registry],
    });
    const duration = new Histogram({
      name: 'compactor_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    const counters = strategyCounters(registry);
    app.decorate('metrics', { registry });

    app.decorateRequest('report', undefined);
    app.decorateRequest('problemCode', undefined);
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const labels = { method: request.method, route, status: String(reply.statusCode) };
      requests.inc(labels);
      duration.observe(labels, reply.elapsedTime / 1000);
      if (request.problemCode?.startsWith('CMP_ERR_SUMMARIZER_')) counters.summarizerErrors.inc({ code: request.problemCode });
      if (request.problemCode?.startsWith('CMP_ERR_STORE_')) counters.storeErrors.inc({ code: request.problemCode });
      if (!request.report) return;
      count(counters, request.report);
      logReport(request, reply, request.report);
    });

    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      reply.type(registry.contentType);
      return registry.metrics();
    });
  },
  { name: 'metrics' },
);
