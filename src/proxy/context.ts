import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { KeyCheck } from '../plugins/app/keys.js';
import type { ProxyMetrics } from './metrics.js';
import type { CallReport } from './report.js';
import type { Upstreams } from './upstream.js';
import type { Windows } from './window.js';

/** What every proxied request is handled with (built once, by the route). */
export interface ProxyContext {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly upstreams: Upstreams;
  readonly metrics: ProxyMetrics;
  readonly keys: KeyCheck;
  /** The configured fit options (`COMPACTOR_PROXY_OPTIONS`), checked at boot. */
  readonly defaults: Record<string, unknown>;
  /** The log line of each model call, and the warning of each conversation's bypass. */
  readonly report: CallReport;
  /** The windows of models the table does not place, and those the providers reported. */
  readonly windows: Windows;
}
