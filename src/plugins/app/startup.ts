import type { Config } from '../../config.js';
import { prepareByDefault } from './prepare.js';
import { workerCount } from './worker-task.js';

/** What the service runs with, as the boot line says it: no credential, no path beyond the store's kind. */
export interface StartupReport {
  readonly version: string;
  readonly store: string;
  readonly store_max_bytes: number;
  readonly summarizer: string;
  readonly upstreams: Record<string, string>;
  readonly keys: 'on' | 'off';
  readonly key_scope: string;
  readonly prepared_summaries: 'on' | 'off';
  readonly workers: number;
  readonly body_limit: number;
  readonly max_inflight_bytes: number;
  readonly host: string;
  readonly port: number;
}

/** A URL's origin only (`scheme://host:port`): never its path, query or credentials; `off` stays `off`. */
export function originOf(url: string): string {
  if (url === 'off') return 'off';
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid';
  }
}

const LOCAL = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/i;

/**
 * The boot line and the warnings for a configuration that will surprise: an upstream turned off
 * (its proxy route answers 502-style errors in the provider's shape), keys off on an address other
 * machines can reach (anyone there may read and write this service's conversations and artifacts).
 */
export function startupReport(config: Config, version: string): { report: StartupReport; warnings: string[] } {
  const upstreams = {
    anthropic: originOf(config.COMPACTOR_UPSTREAM_ANTHROPIC),
    openai: originOf(config.COMPACTOR_UPSTREAM_OPENAI),
    gemini: originOf(config.COMPACTOR_UPSTREAM_GEMINI),
  };
  const keys = (config.COMPACTOR_API_KEYS ?? []).length > 0 ? 'on' : 'off';
  const report: StartupReport = {
    version,
    store: config.COMPACTOR_STORE_URL.replace(/:.*$/s, ''),
    store_max_bytes: config.COMPACTOR_STORE_MAX_BYTES,
    summarizer:
      config.OPENAI_BASE_URL || config.OPENAI_API_KEY ? `llm ${config.COMPACTOR_SUMMARIZER_MODEL ?? ''}`.trim() : 'extractive',
    upstreams,
    keys,
    key_scope: config.COMPACTOR_AUTH_SCOPE,
    prepared_summaries: prepareByDefault(config) ? 'on' : 'off',
    workers: workerCount(config.COMPACTOR_WORKERS),
    body_limit: config.COMPACTOR_BODY_LIMIT,
    max_inflight_bytes: config.COMPACTOR_MAX_INFLIGHT_BYTES,
    host: config.HOST,
    port: config.PORT,
  };
  const warnings: string[] = [];
  for (const [provider, origin] of Object.entries(upstreams)) {
    if (origin === 'off') {
      const name = `COMPACTOR_UPSTREAM_${provider.toUpperCase()}`;
      warnings.push(`${name}=off: the /${provider}/ proxy routes refuse every call`);
    }
  }
  if (keys === 'off' && !LOCAL.test(config.HOST)) {
    warnings.push(
      `COMPACTOR_API_KEYS is unset and HOST=${config.HOST} is reachable from other machines: anyone who can reach it reads every conversation and artifact; set COMPACTOR_API_KEYS`,
    );
  }
  return { report, warnings };
}
