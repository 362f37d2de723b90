import { createRequire } from 'node:module';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import type { Config } from '../config.js';
import { CompactorError } from '../errors.js';
import { artifactSearch } from '../mcp/search.js';
import { mcpServer, type RecallDeps } from '../mcp/server.js';
import { bearerOf, keyCheck } from '../plugins/app/keys.js';
import { reserveMore } from '../plugins/load/admission.js';
import type { Caller } from '../service/artifacts.js';

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
 */
export default async function mcpRoutes(app: FastifyInstance, { config }: { config: Config }): Promise<void> {
  const keys = keyCheck(config.COMPACTOR_API_KEYS);
  const calls = new Counter({
    name: 'compactor_mcp_calls_total',
    help: 'MCP tool calls by tool and outcome (recall: ok, not_found, bad_offset; search: found, none, bad_query, overloaded)',
    labelNames: ['tool', 'outcome'],
    registers: [app.metrics.registry],
  });

  const search = artifactSearch((caller, kinds, limit) => app.compactor.artifacts.recent(caller, kinds, limit));

  /** The caller of a request: its key's, or the shared scope when the service has none. */
  const callerOf = (request: FastifyRequest): Caller => {
    if (!keys.on) return app.compactor.caller(null);
    const key = request.headers['x-compactor-key'];
    const given = bearerOf(request.headers.authorization) ?? (typeof key === 'string' ? key : undefined);
    if (!given) throw new CompactorError('CMP_ERR_AUTH_REQUIRED', 'send Authorization: Bearer <key> or x-compactor-key');
    const d = keys.check(given);
    if (!d) throw new CompactorError('CMP_ERR_AUTH_INVALID', 'the API key is not valid');
    return app.compactor.caller(d);
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
      const caller = callerOf(request);
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
      // What a search loads counts against the weight in flight (COMPACTOR_MAX_INFLIGHT_BYTES) like a
      // /v1 body: searches run one at a time, so the request holds its largest search's originals.
      let weighed = 0;
      const weigh = (chars: number): void => {
        if (chars <= weighed) return;
        reserveMore(request, chars - weighed);
        weighed = chars;
      };
      const deps: RecallDeps = {
        caller,
        artifact: (id, c) => app.compactor.artifact(id, c),
        search: (q, c) => search(q, c, weigh),
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
