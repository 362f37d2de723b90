import type { Config } from './config.js';

/** Every variable with its one-line meaning, in the order `.env.example` and docs/configuration.md list them. */
export const CONFIG_DOCS: Record<keyof Config, string> = {
  HOST: 'Listen address (the container image sets 0.0.0.0)',
  PORT: 'Listen port',
  LOG_LEVEL: 'pino log level: fatal, error, warn, info, debug, trace or silent',
  COMPACTOR_BODY_LIMIT: 'Largest request body in bytes (413 above it)',
  COMPACTOR_KEEP_ALIVE_TIMEOUT_MS: 'Idle keep-alive connections are closed after this many ms',
  COMPACTOR_REQUEST_TIMEOUT_MS: 'A request must arrive whole within this many ms (408 after)',
  COMPACTOR_SHUTDOWN_GRACE_MS: 'On SIGTERM/SIGINT, in-flight requests get this many ms to finish',
  COMPACTOR_TOKEN_CACHE_ENTRIES: 'Per-message token counts kept in the count cache (0 = no cache)',
  COMPACTOR_STORE_URL: 'Artifact store: sqlite:<path> (file created on first use), redis://host:port, or memory:',
  COMPACTOR_STORE_MAX_BYTES:
    "Cap on the artifacts' content bytes in the store; the least recently used are evicted past it (0 = no cap; Redis: about its maxmemory / 1.6)",
  COMPACTOR_STORE_PREFIX:
    "With a redis:// store: first part of the artifacts' Redis keys (<prefix>:art:…, their LRU index, the installation secret); replicas that share artifacts share it",
  COMPACTOR_ARTIFACT_TTL_SECONDS: 'How long offloaded originals live, in seconds (7 days)',
  COMPACTOR_ARTIFACT_SECRET:
    "Secret that keys artifact ids, caller scopes and the MACs of summary markers (never logged); unset: a random one kept in the store. Set the same one where services expand each other's inline artifacts",
  OPENAI_BASE_URL: 'OpenAI-compatible server the LLM summarizer calls (unset with no key: the extractive summarizer serves)',
  OPENAI_API_KEY: 'Key for that server (never logged)',
  COMPACTOR_SUMMARIZER_MODEL: 'Default summarizer model; required when an LLM is configured',
  COMPACTOR_SUMMARIZER_MODELS: 'Comma list of other models a request may choose',
  COMPACTOR_SUMMARIZER_TIMEOUT_MS: 'Deadline of one summarizer call, in ms',
  COMPACTOR_SUMMARIZER_MAX_RETRIES: 'Retries after a retryable summarizer failure (429, 5xx, timeout, reset)',
  COMPACTOR_SUMMARIZER_CONCURRENCY: 'Summarizer calls in flight at once',
  COMPACTOR_PREPARE:
    "on or off: fit prepares the summary a later call will need off the request path (a request's prepare.enabled overrides); unset: on when an LLM summarizer is configured",
  COMPACTOR_PREPARE_QUEUE_MAX:
    'Embedded: prepared summaries waiting for the summarizer, at most; a new one drops the oldest waiting (counted as dropped)',
  COMPACTOR_PREPARE_QUEUE_MAX_BYTES:
    'Embedded: bytes of the histories those waiting summaries hold, at most; the oldest waiting are dropped to make room',
  COMPACTOR_JOBS_PREFIX:
    "With a redis:// store: first part of the Redis keys of prepared summaries (their BullMQ jobs and each key's index); replicas that share them share it",
  COMPACTOR_JOBS_LOCK_MS:
    "With a redis:// store: how long a prepared summary's job stays locked to the replica running it without renewal (renewed every half of it); a replica that dies mid-job has its job taken over within about 1.5 times this",
  COMPACTOR_API_KEYS:
    'Comma list of keys of at least 16 characters; when set, requests need Authorization: Bearer <key> (never logged)',
  COMPACTOR_AUTH_SCOPE:
    "api: keys guard /v1/* only; all: health, metrics and docs too (not the /ui page's static files: what it reads is /v1)",
  COMPACTOR_ALLOWED_HOSTS:
    'Comma list of host names the service answers for besides IP addresses, localhost and other one-label names (.example.com: its subdomains; *: any); others get 421. Checked without COMPACTOR_API_KEYS, or whenever set (DNS rebinding)',
  COMPACTOR_RATE_LIMIT: 'Requests per minute per client on /v1/* (0 = off)',
  COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: 'Above this event-loop delay, answer 503 with retry-after instead of queueing (0 = off)',
  COMPACTOR_MAX_QUEUE_WAIT_MS:
    '/v1 requests take turns, one per event-loop iteration; one that would wait longer than this many ms gets 503 with retry-after (0 = off)',
  COMPACTOR_WORKERS:
    'Worker threads that run large requests off the main thread, so health probes answer during them (0 = all on the main thread; auto = one per CPU core beyond the first, at least 1 and at most 4; each thread adds about 200 MiB)',
  COMPACTOR_WORKER_MIN_BYTES: 'Request bodies of at least this many bytes run on a worker thread',
  COMPACTOR_MAX_INFLIGHT_BYTES:
    'Request weight worked on at once: body bytes plus 160 per message, content block or tool call and 16 per other JSON object or array; a request past it gets 503 with retry-after, one heavier alone 413 (0 = no limit; at least COMPACTOR_BODY_LIMIT). Size memory as about 7 times this, plus 150 MiB, plus 200 MiB per worker',
  COMPACTOR_MAX_MESSAGES:
    'Most messages (items of the history array) one request may hold; more gets 413 CMP_ERR_REQUEST_TOO_MANY_MESSAGES (0 = no cap)',
  COMPACTOR_EXPAND_MAX_BYTES:
    'Most bytes of originals one /v1/expand may restore (they also count against COMPACTOR_MAX_INFLIGHT_BYTES); more gets 413 CMP_ERR_EXPAND_TOO_LARGE (unset = COMPACTOR_BODY_LIMIT: a round trip gives back what one request could send; 0 = no cap)',
  COMPACTOR_DEADLINE_MS: 'Deadline of one strategy request once received, summarizer calls and retries included',
  COMPACTOR_PRICES_FILE:
    'JSON price file, {"models": [{"prefix", "input", "cached_input", "cache_write"?, "output", "currency"?}]} per million tokens, whose rows replace or extend the built-in table (read at boot; a regular file of at most 1 MiB)',
  COMPACTOR_UPSTREAM_ANTHROPIC:
    'Where /anthropic/* forwards (the Anthropic API origin, or another that speaks it); off: the route answers 404',
  COMPACTOR_UPSTREAM_OPENAI: 'Where /openai/* forwards (the OpenAI API origin, or another that speaks it); off: 404',
  COMPACTOR_UPSTREAM_GEMINI: 'Where /gemini/* forwards (the Gemini API origin); off: 404',
  COMPACTOR_PROXY_OPTIONS:
    'Fit options for proxied requests, a JSON object (x-compactor-options overrides per request); unset: target_fraction 0.5, limit fraction 0.8, the cost policy',
  COMPACTOR_PROXY_BUDGET_MS:
    'How long reduction may hold a proxied request before it goes upstream as it is (plus a summarizer call when a reduction is forced)',
  COMPACTOR_DEFAULT_CONTEXT_WINDOW:
    'The context window the proxy assumes for a model the model table does not place (not a window the request declares or the provider has reported)',
  COMPACTOR_PROXY_TIMEOUT_MS: "How long the proxy waits for an upstream's headers, and between two chunks of its answer",
  COMPACTOR_SUMMARIZER_PRICING:
    'The summarizer\'s prices, JSON {"input", "cached_input", "output", "currency"?} per million tokens; unset: the table\'s row for its model, else the agent\'s prices',
};
