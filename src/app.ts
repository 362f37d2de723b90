import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { type Logger, pino } from 'pino';
import sjson from 'secure-json-parse';
import type { Config } from './config.js';
import { CompactorError } from './errors.js';
import compactorPlugin from './plugins/compactor.js';
import guardPlugin from './plugins/guard.js';
import healthPlugin from './plugins/health.js';
import metricsPlugin from './plugins/metrics.js';
import problemPlugin from './plugins/problem.js';
import queuePlugin from './plugins/queue.js';
import swaggerPlugin from './plugins/swagger.js';
import compactRoutes from './routes/compact.js';
import fitRoutes from './routes/fit.js';
import inspectRoutes from './routes/inspect.js';
import summarizeRoutes from './routes/summarize.js';
import windowRoutes from './routes/window.js';
import type { ArtifactStore } from './store/types.js';
import { createSummarizer } from './summarizers/index.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

export interface AppDeps {
  /** A ready pino logger; default: one at the configured level, writing to stdout. */
  logger?: Logger;
  /** An artifact store to use instead of opening `COMPACTOR_STORE_URL` (the caller closes it). */
  store?: ArtifactStore;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * JSON bodies are parsed with `__proto__` and `constructor.prototype` keys refused (prototype
 * pollution), each failure with its own code.
 */
function parseJsonBody(body: string): unknown {
  if (body.length === 0 || body.trim().length === 0) {
    throw new CompactorError('CMP_ERR_REQUEST_EMPTY_BODY', 'the body is empty; send a JSON object');
  }
  try {
    return sjson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/prototype/i.test(message)) {
      throw new CompactorError(
        'CMP_ERR_REQUEST_FORBIDDEN_KEY',
        'the body contains __proto__ or constructor.prototype keys, which are refused',
      );
    }
    if (error instanceof RangeError)
      throw new CompactorError('CMP_ERR_REQUEST_TOO_DEEP', 'the body is nested too deeply to parse');
    throw new CompactorError('CMP_ERR_REQUEST_INVALID_JSON', `the body is not valid JSON (${message.slice(0, 120)})`);
  }
}

/** Creates the pino logger the service uses: no request bodies, no headers. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  return pino({ level: config.LOG_LEVEL, base: { service: 'compactor' } });
}

/**
 * How a request appears in the log lines Fastify writes: method, path and client, never the
 * query string (a client may put a key or a token there) and never headers.
 */
function requestLine(req: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }) {
  return {
    method: req.method,
    url: (req.url ?? '').split('?')[0],
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * Builds the Fastify app: plugins first (errors, metrics, health, docs, the service core), then
 * routes. It never listens; `server.ts` does, and the tests use `inject()` or their own port.
 */
export async function buildApp(config: Config, deps: AppDeps = {}): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = (deps.logger ?? createLogger(config)).child({}, { serializers: { req: requestLine } });
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: config.COMPACTOR_BODY_LIMIT,
    keepAliveTimeout: config.COMPACTOR_KEEP_ALIVE_TIMEOUT_MS,
    requestTimeout: config.COMPACTOR_REQUEST_TIMEOUT_MS,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(problemPlugin);
  await app.register(guardPlugin, {
    apiKeys: config.COMPACTOR_API_KEYS,
    scope: config.COMPACTOR_AUTH_SCOPE,
    rateLimit: config.COMPACTOR_RATE_LIMIT,
    maxEventLoopDelay: config.COMPACTOR_MAX_EVENT_LOOP_DELAY_MS,
  });
  await app.register(swaggerPlugin, { version });
  await app.register(metricsPlugin);
  await app.register(healthPlugin);
  await app.register(queuePlugin, { maxWaitMs: config.COMPACTOR_MAX_QUEUE_WAIT_MS });
  await app.register(compactorPlugin, {
    tokenCacheEntries: config.COMPACTOR_TOKEN_CACHE_ENTRIES,
    storeUrl: config.COMPACTOR_STORE_URL,
    artifactTtlSeconds: config.COMPACTOR_ARTIFACT_TTL_SECONDS,
    summarizer: await createSummarizer(config),
    deadlineMs: config.COMPACTOR_DEADLINE_MS,
    secret: config.COMPACTOR_ARTIFACT_SECRET,
    ...(deps.store ? { store: deps.store } : {}),
  });

  await app.register(windowRoutes);
  await app.register(compactRoutes);
  await app.register(summarizeRoutes);
  await app.register(fitRoutes);
  await app.register(inspectRoutes);
  return app;
}
