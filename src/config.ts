import { z } from 'zod';
import { parseJson, readPriceFile } from './config-files.js';
import { nameProblems } from './config-names.js';
import { autoOrIntFromEnv, HOST_NAME, intFromEnv, redisPrefix, upstream, validRedisUrl } from './config-values.js';
import { PricingSchema } from './cost/fields.js';
import { UPSTREAM_DEFAULTS } from './provider-names.js';

export { PRICES_FILE_MAX_BYTES } from './config-files.js';

/** Keys shorter than this are refused: a guessable key is no key. */
export const API_KEY_MIN_LENGTH = 16;

/**
 * A URL as it may be shown in a log line or a boot error: the password of `user:password@` (or a
 * lone `secret@`) replaced by `***`. Works on text that does not parse as a URL too.
 */
export function redactUrl(text: string): string {
  return text.replace(/^([a-z][\w+.-]*:\/\/)([^/]*)@/i, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return `${scheme}${colon < 0 ? '***' : `${userinfo.slice(0, colon)}:***`}@`;
  });
}

/**
 * The environment the service reads, parsed once at boot. This is the only module that reads
 * `process.env`; everything else receives a `Config`. Names are part of the public contract
 * (docs/configuration.md, "Configuration names").
 */
export const ConfigSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: intFromEnv(0, 65535).default(8080),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  COMPACTOR_BODY_LIMIT: intFromEnv(1024, 1024 * 1024 * 1024).default(32 * 1024 * 1024),
  /** Idle keep-alive connections are closed after this long. */
  COMPACTOR_KEEP_ALIVE_TIMEOUT_MS: intFromEnv(1000, 600_000).default(72_000),
  /** A request must arrive whole (headers and body) within this time. */
  COMPACTOR_REQUEST_TIMEOUT_MS: intFromEnv(1000, 3_600_000).default(120_000),
  /** On SIGTERM/SIGINT, in-flight requests get this long to finish before the process exits. */
  COMPACTOR_SHUTDOWN_GRACE_MS: intFromEnv(0, 600_000).default(10_000),
  /** How many per-message token counts the count cache keeps (least recently used go first). */
  COMPACTOR_TOKEN_CACHE_ENTRIES: intFromEnv(0, 10_000_000).default(200_000),
  /** `sqlite:<path>`, `redis://…` (or `rediss://…`), or `memory:`. */
  COMPACTOR_STORE_URL: z
    .string()
    .regex(/^(memory:?|sqlite:.*|rediss?:\/\/.+)$/, 'expected sqlite:<path>, redis://host:port or memory:')
    .refine(
      (v) => !/^rediss?:/.test(v) || validRedisUrl(v),
      'not a valid Redis URL (expected redis://[user:password@]host[:port][/db])',
    )
    .default('sqlite:./data/compactor.db'),
  /** Cap on the content bytes the store holds; the least recently used artifacts are evicted. */
  COMPACTOR_STORE_MAX_BYTES: intFromEnv(0, Number.MAX_SAFE_INTEGER).default(1024 * 1024 * 1024),
  COMPACTOR_STORE_PREFIX: redisPrefix.default('compactor'),
  COMPACTOR_ARTIFACT_TTL_SECONDS: intFromEnv(1, 10 * 365 * 24 * 3600).default(7 * 24 * 3600),
  COMPACTOR_ARTIFACT_SECRET: z.string().min(32, 'must be at least 32 characters').max(1024).optional(),
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }).optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  COMPACTOR_SUMMARIZER_MODEL: z.string().min(1).max(256).optional(),
  COMPACTOR_SUMMARIZER_MODELS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean),
    )
    .optional(),
  COMPACTOR_SUMMARIZER_TIMEOUT_MS: intFromEnv(100, 600_000).default(30_000),
  COMPACTOR_SUMMARIZER_MAX_RETRIES: intFromEnv(0, 10).default(2),
  COMPACTOR_SUMMARIZER_CONCURRENCY: intFromEnv(1, 256).default(4),
  COMPACTOR_PREPARE: z.enum(['on', 'off']).optional(),
  COMPACTOR_PREPARE_QUEUE_MAX: intFromEnv(1, 100_000).default(16),
  COMPACTOR_PREPARE_QUEUE_MAX_BYTES: intFromEnv(1024, Number.MAX_SAFE_INTEGER).default(48 * 1024 * 1024),
  /** With a Redis store: first part of the prepared summaries' keys (BullMQ's prefix). */
  COMPACTOR_JOBS_PREFIX: redisPrefix.default('compactor'),
  COMPACTOR_JOBS_LOCK_MS: intFromEnv(1000, 600_000).default(20_000),
  COMPACTOR_API_KEYS: z
    .string()
    .transform((v, ctx) => {
      const keys = v
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
      // A template whose keys were never filled in (`,`) would otherwise start an open service.
      if (keys.length === 0) {
        ctx.addIssue({ code: 'custom', message: 'lists no key (only commas or spaces); unset it for a service without keys' });
        return z.NEVER;
      }
      const short = keys.findIndex((k) => k.length < API_KEY_MIN_LENGTH);
      if (short >= 0) {
        ctx.addIssue({
          code: 'custom',
          message: `key ${short + 1} of ${keys.length} has ${keys[short]?.length} characters; at least ${API_KEY_MIN_LENGTH} are required (e.g. openssl rand -hex 32)`,
        });
        return z.NEVER;
      }
      return keys;
    })
    .optional(),
  COMPACTOR_AUTH_SCOPE: z.enum(['api', 'all']).default('api'),
  /** Host names served besides IP addresses and single-label names (`*`: any; `.example.com`: its subdomains). */
  COMPACTOR_ALLOWED_HOSTS: z
    .string()
    .transform((v, ctx) => {
      const names = v
        .split(',')
        .map((n) => n.trim().toLowerCase())
        .filter(Boolean);
      const bad = names.find((n) => !(n === '*' || HOST_NAME.test(n)));
      if (names.length === 0 || bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${bad === undefined ? 'lists no name' : `${JSON.stringify(bad.slice(0, 80))} is not a host name`}; expected a comma list of names (no scheme or port), .suffix for subdomains, or *`,
        });
        return z.NEVER;
      }
      return names;
    })
    .optional(),
  COMPACTOR_RATE_LIMIT: intFromEnv(0, 1_000_000).default(0),
  COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: intFromEnv(0, 60_000).default(1000),
  COMPACTOR_MAX_QUEUE_WAIT_MS: intFromEnv(0, 600_000).default(5000),
  /** Worker threads for large requests (0: everything runs on the main thread; auto: sized to the machine, `workerCount`). */
  COMPACTOR_WORKERS: autoOrIntFromEnv(0, 64).default('auto'),
  /** Bodies of at least this many bytes run on a worker thread. */
  COMPACTOR_WORKER_MIN_BYTES: intFromEnv(0, 1024 * 1024 * 1024).default(256 * 1024),
  /** Request body bytes worked on at once; past it, 503 with retry-after (0: no limit). */
  COMPACTOR_MAX_INFLIGHT_BYTES: intFromEnv(0, 64 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  /** Most messages one request may hold; past it, 413 (0: no cap). */
  COMPACTOR_MAX_MESSAGES: intFromEnv(0, 100_000_000).default(100_000),
  /** Most bytes of originals one expand may restore; past it, 413 (unset: COMPACTOR_BODY_LIMIT; 0: no cap). */
  COMPACTOR_EXPAND_MAX_BYTES: intFromEnv(0, 64 * 1024 * 1024 * 1024).optional(),
  /** Deadline of one strategy request once received (summarizer calls included). */
  COMPACTOR_DEADLINE_MS: intFromEnv(1000, 3_600_000).default(120_000),
  /** A JSON price file whose rows replace or extend the built-in price table (read at boot). */
  COMPACTOR_PRICES_FILE: z
    .string()
    .max(4096)
    .transform((path, ctx) => {
      const rows = readPriceFile(path);
      if (typeof rows === 'string') {
        ctx.addIssue({ code: 'custom', message: rows });
        return z.NEVER;
      }
      return rows;
    })
    .optional(),
  /** Where the proxy routes forward: a provider's API origin (with a path prefix if any), or `off`. */
  COMPACTOR_UPSTREAM_ANTHROPIC: upstream.default(UPSTREAM_DEFAULTS.anthropic),
  COMPACTOR_UPSTREAM_OPENAI: upstream.default(UPSTREAM_DEFAULTS.openai),
  COMPACTOR_UPSTREAM_GEMINI: upstream.default(UPSTREAM_DEFAULTS.gemini),
  /** Fit options for proxied requests, a JSON object (`x-compactor-options` overrides per request). */
  COMPACTOR_PROXY_OPTIONS: z
    .string()
    .max(65_536)
    .transform((text, ctx) => {
      const value = parseJson(text);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        ctx.addIssue({ code: 'custom', message: 'expected a JSON object of fit options' });
        return z.NEVER;
      }
      return value as Record<string, unknown>;
    })
    .optional(),
  /** How long reduction may hold a proxied request before it is forwarded as it is. */
  COMPACTOR_PROXY_BUDGET_MS: intFromEnv(0, 600_000).default(500),
  /** The window the proxy assumes for a model the table does not place (`proxy/window.ts`). */
  COMPACTOR_DEFAULT_CONTEXT_WINDOW: intFromEnv(1000, 100_000_000).default(128_000),
  /** How long the proxy waits for an upstream's headers, and between two chunks of its answer. */
  COMPACTOR_PROXY_TIMEOUT_MS: intFromEnv(1000, 3_600_000).default(600_000),
  /** The summarizer's own prices, JSON `{input, cached_input, output, currency?}` per million tokens. */
  COMPACTOR_SUMMARIZER_PRICING: z
    .string()
    .max(4096)
    .transform((text, ctx) => {
      const parsed = PricingSchema.safeParse(parseJson(text));
      if (!parsed.success) {
        ctx.addIssue({
          code: 'custom',
          message: `expected JSON {input, cached_input, output, currency?}: ${parsed.error.issues[0]?.message}`,
        });
        return z.NEVER;
      }
      return parsed.data;
    })
    .optional(),
});

export type Config = z.output<typeof ConfigSchema>;

/**
 * Whether the summarizer's server is this very service (a proxy base URL exported in the shell
 * the service starts from): every summary would go through the proxy back into fit.
 */
function pointsAtItself(c: Pick<Config, 'OPENAI_BASE_URL' | 'PORT' | 'HOST'>): boolean {
  if (!c.OPENAI_BASE_URL) return false;
  const url = new URL(c.OPENAI_BASE_URL);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const local = ['127.0.0.1', 'localhost', '[::1]', '0.0.0.0', c.HOST].includes(url.hostname);
  return local && port === c.PORT && /^\/(openai|anthropic|gemini)(\/|$)/.test(url.pathname);
}

/** Thrown at boot when a variable is invalid; its message names every offending variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses the environment. Empty strings count as unset, so `PORT=` in an env file means the
 * default rather than an error. Throws `ConfigError` naming each offending variable (never a
 * key's value): an invalid value, an unknown `COMPACTOR_*` name (`config-names.ts`), or
 * variables that contradict each other.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = Object.keys(ConfigSchema.shape) as (keyof Config)[];
  const names = nameProblems(env, known);
  if (names.length > 0) throw new ConfigError(`invalid configuration: ${names.join('; ')}`);
  const input: Record<string, string> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = ConfigSchema.safeParse(input);
  if (parsed.success && (parsed.data.OPENAI_BASE_URL || parsed.data.OPENAI_API_KEY) && !parsed.data.COMPACTOR_SUMMARIZER_MODEL) {
    throw new ConfigError(
      'invalid configuration: COMPACTOR_SUMMARIZER_MODEL is required when OPENAI_BASE_URL or OPENAI_API_KEY is set',
    );
  }
  if (parsed.success) {
    // Inner deadlines must be shorter than outer ones: every summarizer attempt and the waits
    // between them fit in the request deadline, which fits in the time a client keeps the request.
    const c = parsed.data;
    const worst =
      c.COMPACTOR_SUMMARIZER_TIMEOUT_MS * (c.COMPACTOR_SUMMARIZER_MAX_RETRIES + 1) + 10_000 * c.COMPACTOR_SUMMARIZER_MAX_RETRIES;
    if (worst >= c.COMPACTOR_DEADLINE_MS) {
      throw new ConfigError(
        `invalid configuration: COMPACTOR_DEADLINE_MS=${c.COMPACTOR_DEADLINE_MS} must exceed the summarizer's worst case, COMPACTOR_SUMMARIZER_TIMEOUT_MS × (COMPACTOR_SUMMARIZER_MAX_RETRIES + 1) + 10 s per retry = ${worst}`,
      );
    }
  }
  if (parsed.success && pointsAtItself(parsed.data)) {
    throw new ConfigError(
      `invalid configuration: OPENAI_BASE_URL points at this service itself (port ${parsed.data.PORT}): it names the summarizer's server; set the proxy's base URL in the agent's environment only`,
    );
  }
  if (parsed.success) {
    const c = parsed.data;
    if (c.COMPACTOR_MAX_INFLIGHT_BYTES > 0 && c.COMPACTOR_MAX_INFLIGHT_BYTES < c.COMPACTOR_BODY_LIMIT) {
      throw new ConfigError(
        `invalid configuration: COMPACTOR_MAX_INFLIGHT_BYTES=${c.COMPACTOR_MAX_INFLIGHT_BYTES} must be at least COMPACTOR_BODY_LIMIT=${c.COMPACTOR_BODY_LIMIT}, or the largest request could never run`,
      );
    }
  }
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '(environment)');
      const shown = /KEY|SECRET|TOKEN/.test(name) ? '(redacted)' : JSON.stringify(redactUrl(input[name] ?? ''));
      return `${name}=${shown}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  return parsed.data;
}
