import { pino } from 'pino';
import { buildApp } from '../../../src/app.js';
import { testConfig } from '../app.js';
import { listen } from '../net.js';
import type { RecordedRequest } from '../provider/types.js';
import type { ClientName } from './catalog.js';
import { type CapturedHistory, type CheckResult, checkHistory, ENDPOINTS, historiesOf } from './checks.js';
import { type ClientRun, captureClient } from './run.js';
import { type Shapes, shapesOf } from './shapes.js';

/** The real app on a free port of 127.0.0.1 with a memory store and no LLM (summaries are extractive). */
export async function startCompactor(): Promise<{ base: string; close: () => Promise<void> }> {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:' }), { logger: pino({ level: 'silent' }) });
  const { base } = await listen(app);
  return { base, close: () => app.close() };
}

/** One agent run, what it sent, and how every endpoint answered each of its histories. */
export interface ClientReport {
  client: ClientName;
  version: string;
  run: ClientRun;
  /** The run's model calls. */
  requests: RecordedRequest[];
  /** Every request of the run (token counts too): what `shapes` were read from. */
  all: RecordedRequest[];
  histories: CapturedHistory[];
  results: CheckResult[];
  shapes: Shapes;
}

/**
 * Runs one agent version offline against a fresh fake provider (the default scenario: shell
 * calls with large outputs), then posts each model request's history to every endpoint of the
 * Compactor at `compactorBase` and checks the answers (`checkHistory`).
 */
export async function captureAndCheck(
  client: ClientName,
  compactorBase: string,
  options: { version?: string; timeoutMs?: number } = {},
): Promise<ClientReport> {
  const capture = await captureClient(client, options);
  const version = capture.run.version;
  const histories = historiesOf(client, version, capture.requests);
  const results: CheckResult[] = [];
  for (const h of histories) results.push(...(await checkHistory(compactorBase, h)));
  return {
    client,
    version,
    run: capture.run,
    requests: capture.requests,
    all: capture.all,
    histories,
    results,
    shapes: shapesOf(capture.all),
  };
}

/** A plain-text table: one row per request, one column per endpoint (`ok`, `ok*` when it reduced, else the status). */
export function resultTable(report: ClientReport): string {
  const header = ['request', 'items', ...ENDPOINTS];
  const rows = report.histories.map((h) => {
    const cells = ENDPOINTS.map((endpoint) => {
      const r = report.results.find((x) => x.request === h.request && x.endpoint === endpoint);
      if (!r) return '-';
      if (r.ok) return r.applied ? 'ok*' : 'ok';
      return r.status === 200 ? 'FAIL' : String(r.status);
    });
    return [String(h.request), String(h.messages.length), ...cells];
  });
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/**
 * The failures of a report, one line per distinct problem: the same 400 on every endpoint of
 * every request is one line naming the requests and endpoints it hit.
 */
export function failureLines(report: ClientReport): string[] {
  const groups = new Map<string, CheckResult[]>();
  for (const r of report.results.filter((x) => !x.ok)) {
    const key = r.problems.map((p) => p.replace(`/v1/${r.endpoint}: `, '')).join(' | ');
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups].map(([problem, results]) => {
    const requests = [...new Set(results.map((r) => r.request))];
    const endpoints = [...new Set(results.map((r) => `/v1/${r.endpoint}`))];
    const where =
      requests.length * endpoints.length === results.length
        ? `requests ${requests.join(', ')} × ${endpoints.join(', ')}`
        : results.map((r) => `request ${r.request} /v1/${r.endpoint}`).join(', ');
    return `${report.client}@${report.version} ${where}: ${problem}`;
  });
}
