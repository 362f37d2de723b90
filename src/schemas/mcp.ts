import { z } from 'zod';

/**
 * The MCP tools' reads as worker-thread tasks (`OPERATIONS['/mcp/search']`, `['/mcp/recall']`):
 * `/mcp` hands them to the pool when the store is the workers' own. Not HTTP endpoints, so not in
 * the OpenAPI document: the tools' own arguments are checked by the MCP server first.
 */

export const McpSearchRequest = z.strictObject({
  text: z.string().min(1).max(1000),
  regex: z.boolean(),
  conversation: z.string().max(200).optional(),
  maxResults: z.number().int().min(1).max(50),
});

export const McpSearchResponse = z.object({
  hits: z.array(
    z.object({
      id: z.string(),
      kind: z.string(),
      tool_name: z.string().nullable(),
      created_at: z.string(),
      lines: z.array(z.string()),
    }),
  ),
  scanned: z.number().int(),
  truncated: z.boolean(),
});

export const McpRecallRequest = z.strictObject({
  id: z.string().min(1).max(200),
  offset: z.number().int().min(0),
  maxTokens: z.number().int().min(1),
});

export const McpRecallResponse = z.object({
  id: z.string(),
  kind: z.string(),
  tool_name: z.string().nullable(),
  sha256: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  length: z.number().int(),
  body: z.string(),
  next: z.number().int().nullable(),
});
