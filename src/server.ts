import type { FastifyInstance } from 'fastify';
import pTimeout from 'p-timeout';
import { buildApp, createLogger } from './app.js';
import { type Config, ConfigError, loadConfig, redactUrl } from './config.js';
import { StoreBootError } from './store/boot.js';
import { loadEncoders } from './tokens/encoders.js';

/** sysexits: a configuration error. */
const EX_CONFIG = 78;

/** Writes one line to stderr and exits: boot failures are read by people, before any logger. */
function fail(code: number, message: string): never {
  process.stderr.write(`compactor: ${message}\n`);
  process.exit(code);
}

/**
 * A store that cannot serve at boot: its URL, file or credentials are wrong (exit 78, naming the
 * variable), or it did not answer in time (exit 1: an operational fault, not configuration; the
 * supervisor's restart tries again). The URL is shown with its password redacted.
 */
function storeFailure(error: StoreBootError, config: Config): never {
  const url = `COMPACTOR_STORE_URL=${JSON.stringify(redactUrl(config.COMPACTOR_STORE_URL))}`;
  const stage = error.stage === 'secret' ? ' while reading the installation secret (COMPACTOR_ARTIFACT_SECRET unset)' : '';
  if (error.permanent) fail(EX_CONFIG, `invalid configuration: ${url}: ${error.message}${stage}`);
  fail(1, `cannot start: ${url}: ${error.message}${stage}; not a configuration error: exiting 1 so that the supervisor retries`);
}

/**
 * Listening failed: a HOST that is not this machine's or a PORT it may not bind is configuration
 * (78); a port in use, or anything else, is not (1).
 */
function listenFailure(error: NodeJS.ErrnoException, config: Config): never {
  const where = `HOST=${JSON.stringify(config.HOST)} PORT=${config.PORT}`;
  if (error.code === 'EADDRINUSE') fail(1, `cannot listen on ${where}: the address is already in use by another process`);
  if (error.code === 'EACCES') {
    fail(EX_CONFIG, `invalid configuration: ${where}: permission denied (ports below 1024 need privileges); choose another PORT`);
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    fail(EX_CONFIG, `invalid configuration: ${where}: HOST is not an address of this machine (${error.code})`);
  }
  fail(1, `cannot listen on ${where}: ${error.code ?? error.message}`);
}

/** Drains on SIGTERM/SIGINT: readiness off, in-flight requests finish within the grace period, exit 0. */
function handleSignals(app: FastifyInstance, config: Config): void {
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.readiness.ready = false;
    app.log.info({ signal }, 'draining: readiness off, finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error({ grace_ms: config.COMPACTOR_SHUTDOWN_GRACE_MS }, 'grace period over, exiting with requests in flight');
      process.exit(1);
    }, config.COMPACTOR_SHUTDOWN_GRACE_MS);
    force.unref();
    app.close().then(
      () => {
        app.log.info('closed');
        process.exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'error while closing');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

/**
 * Process entry: configuration, app, listen. On SIGTERM or SIGINT, readiness turns off, new
 * connections are refused, in-flight requests finish (up to the grace period), then the process
 * exits 0. Exit codes at boot: 78 (EX_CONFIG) for a configuration error, with a message naming
 * the variable (an invalid value, a store URL whose file, folder or credentials cannot serve, a
 * HOST or PORT that cannot be bound); 1 for an operational fault (the store did not answer
 * within 10 s, the port is in use).
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(EX_CONFIG, error.message);
    throw error;
  }
  const logger = createLogger(config);
  let app: FastifyInstance;
  try {
    app = await buildApp(config, { logger });
  } catch (error) {
    if (error instanceof StoreBootError) storeFailure(error, config);
    throw error;
  }
  handleSignals(app, config);
  // Before the first request, which would otherwise wait for the tokenizers' rank tables.
  loadEncoders();
  try {
    await app.listen({ host: config.HOST, port: config.PORT });
  } catch (error) {
    // The store is open: close it (a SQLite WAL checkpoint, a Redis connection) before leaving.
    await pTimeout(
      app.close().catch(() => {}),
      { milliseconds: 2000, message: false },
    );
    listenFailure(error as NodeJS.ErrnoException, config);
  }
  // The worker pool starts now rather than on the first large request.
  app.workerPool.warm().catch((error: unknown) => logger.error({ err: error }, 'the worker pool did not start'));
}

main().catch((error: unknown) => {
  fail(1, `failed to start: ${error instanceof Error ? error.message : String(error)}`);
});
