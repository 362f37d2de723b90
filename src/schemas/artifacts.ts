import { z } from 'zod';
import { Message, WarningSchema } from '../contract/parts.js';
import { FORMAT_NAMES } from '../formats/registry.js';
import { HistoryFields } from './common.js';

export const ExpandRequest = z
  .strictObject({
    messages: HistoryFields.messages,
    format: HistoryFields.format,
    artifacts: z
      .array(
        z.strictObject({
          id: z
            .string()
            .regex(/^art_[0-9a-f]{24}$/)
            .describe('the art_… id a placeholder names'),
          // Absent on an artifact the server stored (a response may list both kinds): skipped.
          content: z.unknown().optional().describe('the original JSON value (absent: stored on the server, skipped)'),
          // The other fields of a response's artifacts, so that they can be passed back as they came.
          message_index: z.number().int().optional().describe('as the response gave it; not read'),
          kind: z.string().max(64).optional().describe('as the response gave it; not read'),
          tool_name: z.string().nullable().optional().describe('as the response gave it; not read'),
          tokens: z.number().int().optional().describe('as the response gave it; not read'),
          sha256: z.string().max(64).optional().describe('as the response gave it; not read'),
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
    restored: z.number().int().describe('placeholders replaced by their originals'),
    missing: z.array(z.string()).describe('artifact ids that were unknown or expired: their placeholders stay'),
    warnings: z
      .array(WarningSchema)
      .describe(
        'what the caller should know: `placeholder_not_verified` for signed placeholders that stay, not being in their own call',
      ),
    format: z.enum(FORMAT_NAMES).describe('the format the history was read as'),
    messages: z.array(Message).describe('the history with every known original restored, byte-exact'),
  })
  .meta({ id: 'ExpandResponse', description: 'The history with its offloaded originals put back.' });

export const ArtifactParams = z.object({
  id: z.string().max(64).describe('art_… id from a placeholder or an `artifacts` entry'),
});

export const ArtifactResponse = z
  .object({
    id: z.string().describe('art_… content address'),
    kind: z.string().describe('tool_result, tool_input, summary_range, … (as in ArtifactRef)'),
    tool_name: z.string().nullable().describe('the tool whose call or result it was; null for other content'),
    sha256: z.string().describe('SHA-256 of the original JSON value, hex'),
    created_at: z.string().describe('ISO 8601'),
    expires_at: z.string().describe('ISO 8601'),
    content: z.unknown().describe('the original JSON value that was replaced'),
  })
  .meta({ id: 'Artifact', description: 'One offloaded original, until it expires.' });
