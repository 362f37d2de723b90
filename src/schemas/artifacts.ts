import { z } from 'zod';
import { Message } from '../contract/parts.js';
import { FORMAT_NAMES } from '../formats/registry.js';
import { HistoryFields } from './common.js';

export const ExpandRequest = z
  .strictObject({
    messages: HistoryFields.messages,
    format: HistoryFields.format,
    artifacts: z
      .array(
        z.strictObject({
          id: z.string().regex(/^art_[0-9a-f]{24}$/),
          // Absent on an artifact the server stored (a response may list both kinds): skipped.
          content: z.unknown().optional(),
          // The other fields of a response's artifacts, so that they can be passed back as they came.
          message_index: z.number().int().optional(),
          kind: z.string().max(64).optional(),
          tool_name: z.string().nullable().optional(),
          tokens: z.number().int().optional(),
          sha256: z.string().max(64).optional(),
        }),
      )
      .max(100_000)
      .optional()
      .describe(
        'originals returned by a `store: "inline"` compaction or summary, as the response gave them (only id and content are read; content is checked against its id; an entry without content, stored on the server, is skipped)',
      ),
  })
  .meta({ id: 'ExpandRequest' });

export const ExpandResponse = z
  .object({
    messages: z.array(Message).describe('the history with every known original restored, byte-exact'),
    format: z.enum(FORMAT_NAMES),
    restored: z.number().int().describe('placeholders replaced by their originals'),
    missing: z.array(z.string()).describe('artifact ids that were unknown or expired: their placeholders stay'),
  })
  .meta({ id: 'ExpandResponse' });

export const ArtifactParams = z.object({
  id: z.string().max(64).describe('art_… id from a placeholder or an `artifacts` entry'),
});

export const ArtifactResponse = z
  .object({
    id: z.string(),
    kind: z.string(),
    tool_name: z.string().nullable(),
    content: z.unknown().describe('the original JSON value that was replaced'),
    sha256: z.string(),
    created_at: z.string().describe('ISO 8601'),
    expires_at: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'Artifact' });
