import { Counter, Histogram, type Registry } from 'prom-client';

/** The proxy's Prometheus series: requests by provider and outcome, bypasses, upstream latency, tokens saved, prefix breaks. */
export interface ProxyMetrics {
  readonly requests: Counter<'provider' | 'outcome'>;
  readonly bypasses: Counter<'provider' | 'reason'>;
  readonly upstreamSeconds: Histogram<'provider'>;
  readonly tokensSaved: Counter<'provider'>;
  readonly prefixBreaks: Counter<'provider'>;
  readonly usageRead: Counter<'provider' | 'found'>;
  readonly compactions: Counter<'provider' | 'outcome'>;
}

export function proxyMetrics(registry: Registry): ProxyMetrics {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'compactor_proxy_requests_total',
      help: 'Proxied requests by provider and outcome: reduced (a new reduction), kept (the previous one extended), unchanged, bypass, passthrough (not a model call), upstream_error (502)',
      labelNames: ['provider', 'outcome'],
      registers,
    }),
    bypasses: new Counter({
      name: 'compactor_proxy_bypass_total',
      help: 'Proxied model calls forwarded as they came, by reason (each reason, and what to do about it, in docs/proxy.md)',
      labelNames: ['provider', 'reason'],
      registers,
    }),
    upstreamSeconds: new Histogram({
      name: 'compactor_proxy_upstream_seconds',
      help: "Seconds from sending a proxied request upstream to the upstream's response headers",
      labelNames: ['provider'],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    tokensSaved: new Counter({
      name: 'compactor_proxy_tokens_saved_total',
      help: 'Tokens the proxy removed from model calls when it reduced them (counted once, by the call that reduced)',
      labelNames: ['provider'],
      registers,
    }),
    prefixBreaks: new Counter({
      name: 'compactor_proxy_prefix_breaks_total',
      help: 'Model calls whose upstream history changed a message already sent (the cached prefix breaks there)',
      labelNames: ['provider'],
      registers,
    }),
    usageRead: new Counter({
      name: 'compactor_proxy_usage_read_total',
      help: "Answers of reduced model calls by whether their usage was read (from the JSON or the stream's events)",
      labelNames: ['provider', 'found'],
      registers,
    }),
    compactions: new Counter({
      name: 'compactor_proxy_compactions_total',
      help: "Agents' own compaction requests by provider and outcome: answered (from a prepared summary), passed_<reason> (forwarded byte-identical: opted_out, off, none_ready, extractive, unavailable, unsupported_form)",
      labelNames: ['provider', 'outcome'],
      registers,
    }),
  };
}
