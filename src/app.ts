import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { type Logger, pino } from 'pino';
import type { Config } from './config.js';
import compactorPlugin from './plugins/app/compactor.js';
import guardPlugin from './plugins/app/guard.js';
import healthPlugin from './plugins/app/health.js';
import preparePlugin from './plugins/app/prepare.js';
import problemPlugin from './plugins/app/problem.js';
import { startupReport } from './plugins/app/startup.js';
import { answerWireEdges, clientErrorHandler, frameworkErrors, missingHost } from './plugins/app/wire-errors.js';
import workerPoolPlugin from './plugins/app/worker-pool.js';
import { RawBody, workerCount } from './plugins/app/worker-task.js';
import metricsPlugin from './plugins/external/metrics.js';
import swaggerPlugin from './plugins/external/swagger.js';
import admissionPlugin from './plugins/load/admission.js';
import poolSheddingPlugin from './plugins/load/pool-shedding.js';
import queuePlugin from './plugins/load/queue.js';
import underPressurePlugin from './plugins/load/under-pressure.js';
import artifactRoutes from './routes/artifacts.js';
import conversationRoutes from './routes/conversations.js';
import inspectRoutes from './routes/inspect.js';
import mcpRoutes from './routes/mcp.js';
import preparedRoute from './routes/prepared.js';
import proxyRoutes from './routes/proxy.js';
import strategyRoutes from './routes/strategies.js';
import uiRoutes from './routes/ui.js';
import { fastSerializerCompiler } from './schemas/encode.js';
import { isOperationUrl } from './service/operations.js';
import { parseJsonBytes } from './service/request-body.js';
import type { ArtifactStore } from './store/types.js';
import { Limiter } from './summarizers/limiter.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

export interface AppDeps {
  /** A ready pino logger; default: one at the configured level, writing to stdout. */
  logger?: Logger;
  /** An artifact store to use instead of opening `COMPACTOR_STORE_URL` (the caller closes it). */
  store?: ArtifactStore;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

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

/** Fastify's and Node's server options: limits, timeouts, framework errors and request ids. */
function serverOptions(config: Config, logger: FastifyBaseLogger) {
  return {
    loggerInstance: logger,
    bodyLimit: config.COMPACTOR_BODY_LIMIT,
    keepAliveTimeout: config.COMPACTOR_KEEP_ALIVE_TIMEOUT_MS,
    requestTimeout: config.COMPACTOR_REQUEST_TIMEOUT_MS,
    // A connection on which nothing moves for longer than a request may take to arrive and run is
    // closed: a client that never reads its answer would otherwise hold the answer's memory, and
    // its weight against COMPACTOR_MAX_INFLIGHT_BYTES, for as long as it keeps the connection.
    connectionTimeout: config.COMPACTOR_REQUEST_TIMEOUT_MS + config.COMPACTOR_DEADLINE_MS,
    // Given to Node's createServer, not only assigned afterwards as Fastify does: a request timeout
    // below the 60 s headers timeout was otherwise not enforced on a stalled body. And Node checks
    // every 30 s by default: a 2 s timeout could fire after 32 s.
    http: {
      requestTimeout: config.COMPACTOR_REQUEST_TIMEOUT_MS,
      headersTimeout: Math.min(60_000, config.COMPACTOR_REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(5000, Math.max(250, config.COMPACTOR_REQUEST_TIMEOUT_MS / 4)),
      // Node's own 400 for a missing Host is bare text: `missingHost` answers it as a problem.
      requireHostHeader: false,
    },
    // Fastify's own answers (plain JSON or text) become problem+json: the health plugin answers
    // requests that arrive while closing, these two the router's and the HTTP parser's errors.
    return503OnClosing: false,
    frameworkErrors,
    clientErrorHandler: clientErrorHandler(config.COMPACTOR_REQUEST_TIMEOUT_MS),
    forceCloseConnections: 'idle' as const,
    requestIdHeader: false as const,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  };
}

/**
 * JSON bodies: parsed here, or, when heavy (bytes, or the weight admission counted: messages and
 * objects), left raw for a worker thread that parses, validates and runs them (`operationRoute`,
 * `worker.ts`); the validators let a raw body through to that worker.
 */
function handleBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // By weight, not bytes: 250 kB of tiny messages is 8,000 of them to parse, check and rewrite;
    // while every worker is busy the main thread takes one such body on itself (`spares`).
    if (app.workerPool.takes(request, bytes.length) && !app.workerPool.spares(request, bytes.length)) {
      done(null, new RawBody(bytes));
      return;
    }
    try {
      done(null, parseJsonBytes(bytes));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.setValidatorCompiler((route) => {
    // An operation's body is checked by the operation itself (`Operation.check`), typed, in line or on a worker.
    if (route.httpPart === 'body' && isOperationUrl(route.url)) return (data: unknown) => ({ value: data });
    return validatorCompiler(route as Parameters<typeof validatorCompiler>[0]);
  });
  // fastify-type-provider-zod's serializer, its bytes and refusals, compiled once per schema (`schemas/encode.ts`).
  app.setSerializerCompiler(fastSerializerCompiler);
}

/**
 * Every answer names its request id; while draining, an answer still in the works closes its
 * connection: Node reaps only the connections that are idle when the server closes, and a
 * keep-alive client would otherwise hold the drain open until its keep-alive timeout.
 */
function answerHooks(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onRequest', missingHost);
  let draining = false;
  // Connections that never sent a byte: Node closes only idle ones (after a request) when the server
  // closes, so a client's spare connection (Node's own fetch opens one after a stream is aborted)
  // would hold the close open until the headers timeout.
  const unused = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  app.server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
  app.addHook('preClose', async () => {
    draining = true;
    for (const socket of unused) socket.destroy();
  });
  app.addHook('onSend', async (_request, reply) => {
    if (draining) reply.header('connection', 'close');
  });
}

/**
 * The plugins, in order: errors, guard, docs, metrics, the load's (`plugins/load/`: turns,
 * admission, event-loop and pool shedding), the service core, workers, health.
 */
async function registerPlugins(app: FastifyInstance, config: Config, deps: AppDeps): Promise<void> {
  // Summarizer calls in flight, counted across the main thread and the worker pool.
  const summarizerSlots = Limiter.shared();
  await app.register(problemPlugin);
  await app.register(guardPlugin, {
    apiKeys: config.COMPACTOR_API_KEYS,
    scope: config.COMPACTOR_AUTH_SCOPE,
    rateLimit: config.COMPACTOR_RATE_LIMIT,
    allowedHosts: config.COMPACTOR_ALLOWED_HOSTS,
    bindHost: config.HOST,
  });
  await app.register(underPressurePlugin, { maxEventLoopDelay: config.COMPACTOR_MAX_EVENT_LOOP_DELAY_MS });
  await app.register(swaggerPlugin, { version, apiKeys: config.COMPACTOR_API_KEYS !== undefined });
  await app.register(metricsPlugin);
  await app.register(queuePlugin, { maxWaitMs: config.COMPACTOR_MAX_QUEUE_WAIT_MS });
  await app.register(admissionPlugin, {
    maxInflightBytes: config.COMPACTOR_MAX_INFLIGHT_BYTES,
    maxMessages: config.COMPACTOR_MAX_MESSAGES,
  });
  await app.register(compactorPlugin, { config, summarizerSlots, ...(deps.store ? { store: deps.store } : {}) });
  await app.register(preparePlugin, { config });
  await app.register(workerPoolPlugin, {
    workers: workerCount(config.COMPACTOR_WORKERS),
    minBytes: config.COMPACTOR_WORKER_MIN_BYTES,
    config,
    summarizerSlots,
  });
  await app.register(poolSheddingPlugin, { maxWaitMs: config.COMPACTOR_MAX_QUEUE_WAIT_MS });
  // Readiness asks the store: after the plugin that opens it.
  await app.register(healthPlugin);
}

/**
 * Builds the Fastify app: plugins first (errors, metrics, health, docs, the service core), then
 * routes. It never listens; `server.ts` does, and the tests use `inject()` or their own port.
 */
export async function buildApp(config: Config, deps: AppDeps = {}): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = (deps.logger ?? createLogger(config)).child({}, { serializers: { req: requestLine } });
  const app = Fastify(serverOptions(config, logger));
  answerWireEdges(app.server, logger);
  handleBodies(app);
  answerHooks(app);
  await registerPlugins(app, config, deps);
  await app.register(strategyRoutes);
  await app.register(artifactRoutes);
  await app.register(preparedRoute);
  await app.register(conversationRoutes);
  await app.register(uiRoutes);
  await app.register(inspectRoutes);
  await app.register(proxyRoutes, { config });
  await app.register(mcpRoutes, { config });
  app.addHook('onReady', async () => {
    const { report, warnings } = startupReport(config, version);
    app.log.info(report, 'compactor starting');
    for (const warning of warnings) app.log.warn({ config: true }, warning);
  });
  return app;
}
