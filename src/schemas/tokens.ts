import { z } from 'zod';
import { WarningCode } from '../contract/codes.js';
import { FORMAT_NAMES } from '../formats/registry.js';
import { HistoryFields } from './common.js';

const { trigger: _trigger, dry_run: _dryRun, recall_tool: _recallTool, ...fields } = HistoryFields;

export const TokensRequest = z.strictObject(fields).meta({ id: 'TokensRequest' });

export const TokensResponse = z
  .object({
    total: z.number().int().describe('messages, system, tools and every framing overhead the provider charges'),
    system: z.number().int().describe('tokens of the top-level `system`'),
    tools: z.number().int().describe('tokens of the tool definitions'),
    occupancy: z.number().int().describe('reported usage plus counted tokens after it; equals total without usage'),
    counting: z
      .enum(['exact', 'estimated', 'usage+exact', 'usage+estimated'])
      .describe("exact: the model's own tokenizer; estimated: a close one; usage+: reported usage plus counted tokens after it"),
    tokenizer: z.string().describe('the tokenizer that counted'),
    format: z.enum(FORMAT_NAMES).describe('the format the history was read as'),
    context_window: z.number().int().nullable().describe("the model's context window; null when the model is unknown"),
    messages: z.array(z.number().int()).describe('tokens per message, framing included'),
  })
  .meta({ id: 'TokensResponse', description: 'The history counted, per message and in total.' });

export const ValidateRequest = z.strictObject(fields).meta({ id: 'ValidateRequest' });

export const ValidateResponse = z
  .object({
    valid: z.boolean().describe('whether the history satisfies every structural rule of its format'),
    format: z.enum(FORMAT_NAMES).describe('the format the history was read as'),
    violations: z
      .array(
        z.object({
          index: z.number().int().describe('the message that breaks the rule'),
          rule: z.string().describe('the rule, by its stable name'),
          message: z.string().describe('what is wrong, in words'),
        }),
      )
      .describe('every rule broken (empty when valid)'),
    warnings: z
      .array(
        z.object({
          code: WarningCode.describe('stable warning code'),
          message: z.string().describe('what the provider may object to, in words'),
        }),
      )
      .describe('what is allowed but likely unintended'),
  })
  .meta({ id: 'ValidateResponse', description: "The history checked against its format's structural rules." });
