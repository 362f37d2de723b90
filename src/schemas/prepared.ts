import { z } from 'zod';
import { BilledUsage, PreparedSchema } from '../contract/parts.js';

export const PreparedParams = z.object({
  id: z.string().max(64).describe('the `prepared.id` of a fit response'),
});

export const PreparedResponse = z
  .object({
    ...PreparedSchema.shape,
    usage: BilledUsage.nullable().describe(
      'what making it cost (billed to the response that splices it in); null until it is made',
    ),
    created_at: z.string().describe('when it was asked for (ISO 8601)'),
    error: z.string().optional().describe('the error code of the last failed attempt'),
  })
  .meta({ id: 'PreparedSummary', description: 'One prepared summary of the caller: its state, range and cost.' });
