import { buildApp, createLogger } from './app.js';
import { ConfigError, loadConfig } from './config.js';

/**
 * Process entry: configuration, app, listen. On SIGTERM or SIGINT, readiness turns off, new
 * connections are refused, in-flight requests finish (up to the grace period), then the process
 * exits 0; an invalid configuration exits 78 (EX_CONFIG) with a message naming the variable.
 */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`compactor: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const logger = createLogger(config);
  const app = await buildApp(config, { logger });

  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.readiness.ready = false;
    logger.info({ signal }, 'draining: readiness off, finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error({ grace_ms: config.COMPACTOR_SHUTDOWN_GRACE_MS }, 'grace period over, exiting with requests in flight');
      process.exit(1);
    }, config.COMPACTOR_SHUTDOWN_GRACE_MS);
    force.unref();
    app.close().then(
      () => {
        logger.info('closed');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error while closing');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);

  await app.listen({ host: config.HOST, port: config.PORT });
  // The worker pool starts now rather than on the first large request.
  app.offload.warm().catch((error: unknown) => logger.error({ err: error }, 'the worker pool did not start'));
}

main().catch((error: unknown) => {
  process.stderr.write(`compactor: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
