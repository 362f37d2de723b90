import { type Config, ConfigError } from '../config.js';
import { PROXY_ONLY_OPTIONS, ProxyOptions } from '../strategies/fit/options.js';
import { Bypass } from './reduce.js';

/** The configured fit options, checked at boot: a typo in them is refused before the service starts. */
export function bootOptions(config: Config): Record<string, unknown> {
  const options = config.COMPACTOR_PROXY_OPTIONS ?? {};
  const parsed = ProxyOptions.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `invalid configuration: COMPACTOR_PROXY_OPTIONS: ${issue?.path.join('.') || '(root)'} ${issue?.message}`,
    );
  }
  return options;
}

/** A request's `x-compactor-options` over the configured ones; a bypass when it is not a JSON object of fit options. */
export function requestOptions(defaults: Record<string, unknown>, header: string | undefined): Record<string, unknown> {
  if (header === undefined) return defaults;
  let value: unknown;
  try {
    value = JSON.parse(header);
  } catch {
    throw new Bypass('options');
  }
  if (!ProxyOptions.safeParse(value).success) throw new Bypass('options');
  return { ...defaults, ...(value as Record<string, unknown>) };
}

/** The options fit is given: the proxy's own (instant compaction's) left out. */
export function fitOptionsOf(options: Record<string, unknown>): Record<string, unknown> {
  const out = { ...options };
  for (const key of PROXY_ONLY_OPTIONS) delete out[key];
  return out;
}
