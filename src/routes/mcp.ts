import { createRequire } from 'node:module';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import PQueue from 'p-queue';
import { Counter } from 'prom-client';
import type { Config } from '../config.js';
import { CompactorError } from '../errors.js';
import { mcpServer, type RecallDeps } from '../mcp/server.js';
import { bearerOf, keyCheck } from '../plugins/app/keys.js';
import { failureError } from '../plugins/app/worker-task.js';
import { reserveMore } from '../plugins/load/admission.js';
import type { Caller } from '../service/artifacts.js';
import type { OperationUrl } from '../service/operations.js';
import { type RecallPage, recallPage } from '../service/recall.js';
import { type SearchResult, searchOriginals } from '../service/search.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/**
 * Most JSON-RPC messages one POST may hold (a batch): each may be a search through up to
 * `SEARCH_LIMIT` of originals. A longer batch is answered 400 with one JSON-RPC error
 * (`-32600`, Invalid Request, id null), nothing of it run.
 */
export const MCP_MAX_BATCH = 10;

/**
 * `/mcp`: an MCP server (streamable HTTP, stateless: each POST is answered on its own) on the
 * service's own port, so that the agents people run (Claude Code, Codex, opencode, the OpenAI
 * Agents SDK) can recall what Compactor cleared. Under the service's auth: with keys, the
 * Compactor key in `Authorization: Bearer` or `x-compactor-key`; none on the embedded default.
 * Tenant-scoped exactly like `/v1/artifacts`.
 *
 * The tools' reads of originals (a search's up to 32 MiB, a recall's one original, 20 MiB at
 * most) run one at a time in the process, and on a worker thread where the store is the
 * workers' own (SQLite, Redis; `COMPACTOR_WORKERS` above 0): the main thread then never reads,
 * parses nor scans an original, and answers probes and other requests while a batch of ten
 * searches reads a 20 MiB original ten times. With a store in the main thread's memory, or no
 * workers, they run in line, yielding to the event loop as they read.
 */
export default async function mcpRoutes(app: FastifyInstance, { config }: { config: Config }): Promise<void> {
  const keys = keyCheck(config.COMPACTOR_API_KEYS);
  const calls = new Counter({
    name: 'compactor_mcp_calls_total',
    help: 'MCP tool calls by tool and outcome (recall: ok, not_found, bad_offset, overloaded; search: found, none, bad_query, overloaded)',
    labelNames: ['tool', 'outcome'],
    registers: [app.metrics.registry],
  });

  /** The tools' reads of originals, one at a time in the process: at most one read's originals are held. */
  const reads = new PQueue({ concurrency: 1 });

  /** The caller of a request (its key's digest, or null: the shared scope when the service has none). */
  const callerOf = (request: FastifyRequest): { caller: Caller; digest: Buffer | null } => {
    if (!keys.on) return { caller: app.compactor.caller(null), digest: null };
    const key = request.headers['x-compactor-key'];
    const given = bearerOf(request.headers.authorization) ?? (typeof key === 'string' ? key : undefined);
    if (!given) throw new CompactorError('CMP_ERR_AUTH_REQUIRED', 'send Authorization: Bearer <key> or x-compactor-key');
    const d = keys.check(given);
    if (!d) throw new CompactorError('CMP_ERR_AUTH_INVALID', 'the API key is not valid');
    return { caller: app.compactor.caller(d), digest: d };
  };

  /**
   * Runs one read on a worker thread (`OPERATIONS['/mcp/…']`): the arguments go as JSON, the
   * worker reads the store itself, and only the answer (hits, a page) comes back.
   */
  const onWorker = async <R>(
    url: OperationUrl,
    args: object,
    request: FastifyRequest,
    digest: Buffer | null,
    weigh: (chars: number) => void,
  ): Promise<R> => {
    const done = await app.workerPool.run(url, Buffer.from(JSON.stringify(args)), request, undefined, digest, weigh);
    if (!done.ok) throw failureError(done);
    return JSON.parse(Buffer.from(done.payload.buffer, done.payload.byteOffset, done.payload.byteLength).toString('utf8')) as R;
  };

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: '/mcp',
    // Weighed like /v1 (plugins/load/admission.ts): its body, and what its searches load.
    config: { admitted: true },
    schema: {
      tags: ['mcp'],
      summary: 'MCP server: recall and search what Compactor cleared (streamable HTTP)',
      description:
        "An MCP server over streamable HTTP (stateless: POST JSON-RPC, answered as JSON) with two tools: `recall(id, offset?, max_tokens?)`, the original of an artifact byte-exact, paged; `search(query, regex?, conversation?)`, the ids of the originals that match, with the matching lines. Under the service's auth; the caller's own artifacts only. GET (a server-sent stream) and DELETE (a session) answer 405: nothing is kept between calls.",
      hide: true,
    },
    handler: async (request, reply) => {
      const { caller, digest } = callerOf(request);
      if (request.method !== 'POST') {
        return reply
          .code(405)
          .header('allow', 'POST')
          .type('application/json')
          .send({
            jsonrpc: '2.0',
            error: { code: -32000, message: 'this MCP server is stateless: POST each message' },
            id: null,
          });
      }
      if (Array.isArray(request.body) && request.body.length > MCP_MAX_BATCH) {
        return reply
          .code(400)
          .type('application/json')
          .send({
            jsonrpc: '2.0',
            error: {
              code: -32600,
              message: `a batch of ${request.body.length} messages is more than this server takes at once (${MCP_MAX_BATCH}): send fewer`,
            },
            id: null,
          });
      }
      // What a read loads counts against the weight in flight (COMPACTOR_MAX_INFLIGHT_BYTES) like a
      // /v1 body: reads run one at a time, so the request holds its largest read's originals.
      let weighed = 0;
      const weigh = (chars: number): void => {
        if (chars <= weighed) return;
        reserveMore(request, chars - weighed);
        weighed = chars;
      };
      const inLine = async (chars: number) => weigh(chars);
      // Decided per request: the pool is decorated after the routes are registered.
      const pooled = app.workerPool.available && !app.storeIsLocal;
      const deps: RecallDeps = {
        caller,
        recall: (id, offset, maxTokens, c) =>
          reads.add(() =>
            pooled
              ? onWorker<RecallPage>('/mcp/recall', { id, offset, maxTokens }, request, digest, weigh)
              : recallPage((i, cc) => app.compactor.artifact(i, cc), id, c, offset, maxTokens, inLine),
          ),
        search: (q, c) =>
          reads.add(() =>
            pooled
              ? onWorker<SearchResult>('/mcp/search', q, request, digest, weigh)
              : searchOriginals((cc, kinds, limit) => app.compactor.artifacts.recent(cc, kinds, limit), q, c, inLine),
          ),
        ttlSeconds: config.COMPACTOR_ARTIFACT_TTL_SECONDS,
        count: (tool, outcome) => calls.inc({ tool, outcome }),
      };
      const server = mcpServer(deps, version);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.raw.once('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      reply.hijack();
      await transport.handleRequest(request.raw, reply.raw, request.body);
      return reply;
    },
  });
}
