import { z } from 'zod';
import { FORMAT_NAMES } from '../formats/registry.js';
import { HistoryFields } from './common.js';

const { trigger: _trigger, dry_run: _dryRun, ...fields } = HistoryFields;

export const TokensRequest = z.strictObject(fields).meta({ id: 'TokensRequest' });

export const TokensResponse = z
  .object({
    total: z.number().int().describe('messages, system, tools and every framing overhead the provider charges'),
    messages: z.array(z.number().int()).describe('tokens per message, framing included'),
    system: z.number().int(),
    tools: z.number().int(),
    occupancy: z.number().int().describe('reported usage plus counted tokens after it; equals total without usage'),
    counting: z.enum(['exact', 'estimated', 'usage+exact', 'usage+estimated']),
    tokenizer: z.string(),
    format: z.enum(FORMAT_NAMES),
    context_window: z.number().int().nullable(),
  })
  .meta({ id: 'TokensResponse' });

export const ValidateRequest = z.strictObject(fields).meta({ id: 'ValidateRequest' });

export const ValidateResponse = z
  .object({
    valid: z.boolean(),
    format: z.enum(FORMAT_NAMES),
    violations: z.array(z.object({ index: z.number().int(), rule: z.string(), message: z.string() })),
    warnings: z.array(z.object({ code: z.string(), message: z.string() })),
  })
  .meta({ id: 'ValidateResponse' });
