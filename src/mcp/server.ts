import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CompactorError } from '../errors.js';
import { describeKind } from '../history/artifact-kinds.js';
import type { Caller } from '../service/artifacts.js';
import { DEFAULT_PAGE_TOKENS, type RecallPage } from '../service/recall.js';
import type { SearchQuery, SearchResult } from '../service/search.js';

export type { SearchQuery, SearchResult };

/**
 * The MCP server of one request: the tools a model calls to get back what Compactor cleared or
 * summarized, over the caller's own artifacts only (another key's ids are unknown here, as they
 * are to `GET /v1/artifacts/{id}`). Built per request (the stateless streamable HTTP mode): it
 * holds nothing between calls.
 */

/** What a recall reads and what the search looks through, for one caller. */
export interface RecallDeps {
  readonly caller: Caller;
  /**
   * One page of an original (`service/recall.ts`), read as a use; throws
   * `CMP_ERR_ARTIFACT_NOT_FOUND` when unknown or expired.
   */
  readonly recall: (id: string, offset: number, maxTokens: number, caller: Caller) => Promise<RecallPage>;
  /** The caller's originals matching a query, newest first (bounded). */
  readonly search?: (query: SearchQuery, caller: Caller) => Promise<SearchResult>;
  /** How long originals live, for the model's explanation of an unknown id. */
  readonly ttlSeconds: number;
  /** Counts each call by tool and outcome (never its arguments). */
  readonly count: (tool: 'recall' | 'search', outcome: string) => void;
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError } : {}),
});

/** What an original was, in one line: its kind, tool and when it was cleared. */
function what(view: RecallPage): string {
  const tool = view.tool_name ? ` of the tool \`${view.tool_name}\`` : '';
  return `${view.id}: ${describeKind(view.kind)}${tool} (${view.kind}), stored ${view.created_at}, kept until ${view.expires_at}.`;
}

async function recall(deps: RecallDeps, id: string, offset: number, maxTokens: number): Promise<CallToolResult> {
  let view: RecallPage;
  try {
    view = await deps.recall(id.trim(), offset, maxTokens, deps.caller);
  } catch (error) {
    if (error instanceof CompactorError && error.code === 'CMP_ERR_OVERLOADED') {
      deps.count('recall', 'overloaded');
      return text(`The service is busy: ${error.message}. Recall it again later.`, true);
    }
    if (!(error instanceof CompactorError) || error.code !== 'CMP_ERR_ARTIFACT_NOT_FOUND') throw error;
    deps.count('recall', 'not_found');
    const days = Math.round(deps.ttlSeconds / 86400);
    const shape = /^art_[0-9a-f]{24}$/.test(id.trim())
      ? ''
      : ' Ids look like art_ followed by 24 hexadecimal digits, exactly as the placeholder shows them.';
    return text(
      `${id} is not known here: it has expired (originals are kept ${days >= 1 ? `${days} days` : `${deps.ttlSeconds} seconds`} after their last use), it was never stored (a placeholder cleared with store "none"), or it belongs to another key.${shape} The \`search\` tool looks through the originals that are still here.`,
      true,
    );
  }
  const { length, body, next } = view;
  if (offset > length) {
    deps.count('recall', 'bad_offset');
    return text(`offset ${offset} is past the end of ${view.id}, which has ${length} characters.`, true);
  }
  deps.count('recall', 'ok');
  const span =
    next === null && offset === 0 ? `all ${length} characters` : `characters ${offset}–${offset + body.length} of ${length}`;
  const more = next === null ? '' : `\n--- more: call recall with id ${view.id} and offset ${next} ---`;
  return text(`${what(view)} Below: ${span}, exactly as it was.\n--- original ---\n${body}${more}`);
}

async function search(deps: RecallDeps, q: SearchQuery): Promise<CallToolResult> {
  if (!deps.search) return text('search is not available on this service', true);
  let result: SearchResult;
  try {
    result = await deps.search(q, deps.caller);
  } catch (error) {
    if (error instanceof CompactorError && error.code === 'CMP_ERR_REQUEST_VALIDATION') {
      deps.count('search', 'bad_query');
      return text(`${error.message}. Regular expressions use RE2 syntax (no backreferences or lookaround).`, true);
    }
    if (error instanceof CompactorError && error.code === 'CMP_ERR_OVERLOADED') {
      deps.count('search', 'overloaded');
      return text(`The service is busy: ${error.message}. Search again later.`, true);
    }
    throw error;
  }
  deps.count('search', result.hits.length > 0 ? 'found' : 'none');
  const bounds = result.truncated
    ? ` (the search stopped at its bounds after ${result.scanned} originals; narrow the query)`
    : '';
  if (result.hits.length === 0) return text(`No original matches ${JSON.stringify(q.text)} among ${result.scanned}${bounds}.`);
  const blocks = result.hits.map(
    (h) =>
      `${h.id} (${h.kind}${h.tool_name ? `, tool ${h.tool_name}` : ''}, stored ${h.created_at}):\n${h.lines.map((l) => `  ${l}`).join('\n')}`,
  );
  return text(`${result.hits.length} originals match${bounds}; read one whole with the recall tool.\n\n${blocks.join('\n\n')}`);
}

/**
 * The tools' arguments, built once: zod compiles a schema's checks on its first use, and a schema
 * built with each request's server would be compiled again on every request's main thread.
 */
const RECALL_INPUT = z.object({
  id: z.string().min(1).max(200).describe('the art_… id, as the placeholder or summary shows it'),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('the character to start from (0: the beginning); the previous answer says where the next page starts'),
  max_tokens: z
    .number()
    .int()
    .min(100)
    .max(100_000)
    .optional()
    .describe(`how much to read at once, in tokens (default ${DEFAULT_PAGE_TOKENS})`),
});

const SEARCH_INPUT = z.object({
  query: z
    .string()
    .min(1)
    .max(1000)
    .describe('the text to find (exact, case-sensitive), or a regular expression with regex: true'),
  regex: z.boolean().optional().describe('read query as an RE2 regular expression (linear time; no backreferences)'),
  conversation: z
    .string()
    .max(200)
    .optional()
    .describe('only the originals of this conversation (the x-compactor-conversation id the proxy answers with)'),
  max_results: z.number().int().min(1).max(50).optional().describe('most originals to list (default 10)'),
});

/** The MCP server for one caller: `recall` and `search`. */
export function mcpServer(deps: RecallDeps, version: string): McpServer {
  const server = new McpServer({ name: 'compactor', version }, { capabilities: { tools: {} } });
  server.registerTool(
    'recall',
    {
      title: 'Recall an original Compactor cleared',
      description:
        'Get back, exactly as it was, something Compactor removed from this conversation to save context: a tool result replaced by a placeholder that names an id (art_ followed by 24 hex digits), the messages a summary replaced, the middle of a truncated output, or a thinking block. Pass the id exactly as the placeholder or summary shows it. A long original comes in pages: call again with `offset` set to the `next` offset the answer gives. Use it whenever you need the details of an earlier output you no longer see; use `search` when you do not know the id.',
      inputSchema: RECALL_INPUT,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ id, offset, max_tokens }) => recall(deps, id, offset ?? 0, max_tokens ?? DEFAULT_PAGE_TOKENS),
  );
  server.registerTool(
    'search',
    {
      title: 'Search what Compactor cleared',
      description:
        'Search the originals Compactor removed from your conversations (cleared tool results, summarized messages) for a string you need but no longer see: a file path, an error message, an identifier, a number. Exact text by default; set `regex` for an RE2 regular expression. Answers the matching ids with the matching lines; read one whole with `recall`.',
      inputSchema: SEARCH_INPUT,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ query, regex, conversation, max_results }) =>
      search(deps, { text: query, regex: regex === true, conversation, maxResults: max_results ?? 10 }),
  );
  return server;
}
