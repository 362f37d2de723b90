import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { build } from '../support/app.js';
import { root } from '../support/manifests.js';

/**
 * The operators' files in deploy/monitoring/: the Grafana dashboard parses and every metric it
 * queries is one the service exports (read from a built app's /metrics), and so is every metric
 * the alert rules name; the ServiceMonitor selects the Service of shared-redis.yaml by its labels
 * and port. Each check also runs on a broken copy, so a check that stops detecting fails here.
 */

const read = (path: string) => readFileSync(join(root, path), 'utf8');
/** Prometheus's own series, not the service's. */
const PROMETHEUS_OWN = new Set(['up']);

/** Metric names a PromQL expression selects: every name followed by a `{` matcher (all of ours are). */
function metricsOf(expr: string): string[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{/g)].map((m) => m[1] as string);
}

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}

function dashboardExprs(text: string): { panel: string; expr: string }[] {
  const dash = JSON.parse(text) as { panels: Panel[] };
  return dash.panels.flatMap((p) => (p.targets ?? []).map((target) => ({ panel: p.title, expr: target.expr })));
}

function ruleExprs(text: string): { alert: string; expr: string; for?: string }[] {
  const docs = parseAllDocuments(text).map((d) => d.toJS()) as { kind: string; spec: { groups: { rules: [] }[] } }[];
  return docs.filter((d) => d.kind === 'PrometheusRule').flatMap((d) => d.spec.groups.flatMap((g) => g.rules));
}

function unknown(exprs: readonly { expr: string }[], exported: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const { expr } of exprs)
    for (const name of metricsOf(expr)) if (!exported.has(name) && !PROMETHEUS_OWN.has(name)) out.add(name);
  return [...out];
}

t.test('the dashboard and the alert rules query only metrics the service exports', async (t) => {
  const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
  // A request of each kind first, so that every family is in use (they are listed even unused).
  await app.inject({ method: 'POST', url: '/v1/tokens', payload: { messages: [{ role: 'user', content: 'hi' }] } });
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const exported = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (!name) continue;
    exported.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(`${name}${s}`);
    if (type === 'summary') for (const s of ['_sum', '_count']) exported.add(`${name}${s}`);
  }
  t.ok(
    exported.has('compactor_proxy_requests_total') && exported.has('nodejs_eventloop_lag_p99_seconds'),
    'the registry is read',
  );

  const dashboard = dashboardExprs(read('deploy/monitoring/grafana-dashboard.json'));
  t.ok(dashboard.length >= 20, `the dashboard has queries (${dashboard.length})`);
  for (const { panel, expr } of dashboard) t.ok(metricsOf(expr).length > 0, `${panel}: names a metric`);
  t.same(unknown(dashboard, exported), [], 'every metric the dashboard queries is exported');
  for (const family of [
    'compactor_proxy_requests_total',
    'compactor_proxy_bypass_total',
    'compactor_proxy_tokens_saved_total',
    'compactor_estimated_spend_avoided_total',
    'compactor_proxy_prefix_breaks_total',
    'compactor_proxy_upstream_seconds_bucket',
    'compactor_inflight_bytes',
    'compactor_queue_depth',
    'compactor_store_bytes',
    'compactor_artifacts_evicted_total',
    'compactor_prepared_total',
    'compactor_mcp_calls_total',
  ]) {
    t.ok(
      dashboard.some((q) => metricsOf(q.expr).includes(family)),
      `the dashboard shows ${family}`,
    );
  }

  const rules = ruleExprs(read('deploy/monitoring/alerts.yaml'));
  t.same(
    rules.map((r) => r.alert),
    ['CompactorBypassRatioHigh', 'CompactorNotReady', 'CompactorDown', 'CompactorStoreErrors', 'CompactorEventLoopLag'],
  );
  for (const rule of rules) t.match(rule.for, /^\d+m$/, `${rule.alert} waits before firing`);
  t.same(unknown(rules, exported), [], 'every metric the alert rules name is exported');

  const broken = [{ expr: 'sum(rate(compactor_no_such_total{job="x"}[5m]))' }];
  t.same(unknown(broken, exported), ['compactor_no_such_total'], 'a metric that does not exist is caught');
});

t.test('the ServiceMonitor selects the Service of shared-redis.yaml by label and port name', async (t) => {
  const monitor = parseAllDocuments(read('deploy/monitoring/servicemonitor.yaml'))[0]?.toJS() as {
    apiVersion: string;
    kind: string;
    spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
  };
  t.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
  t.equal(monitor.kind, 'ServiceMonitor');
  const services = parseAllDocuments(read('deploy/kubernetes/shared-redis.yaml'))
    .map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: { name: string; labels?: Record<string, string> };
          spec: { ports: { name: string }[] };
        },
    )
    .filter((d) => d?.kind === 'Service');
  const selects = (labels: Record<string, string> | undefined) =>
    Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => labels?.[k] === v);
  const selected = services.filter((s) => selects(s.metadata.labels));
  t.same(
    selected.map((s) => s.metadata.name),
    ['compactor'],
    'the compactor Service only (not Redis)',
  );
  t.ok(
    selected[0]?.spec.ports.some((p) => p.name === monitor.spec.endpoints[0]?.port),
    'by a port name it has',
  );
  t.equal(monitor.spec.endpoints[0]?.path, '/metrics');
  t.notOk(selects(undefined), 'a Service without the label is not selected');
});
