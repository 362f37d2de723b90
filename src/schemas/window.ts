import { z } from 'zod';
import { STRATEGIES } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

export const WindowRequest = z
  .strictObject({ ...HistoryFields, ...STRATEGIES.window.options.shape })
  .meta({ id: 'WindowRequest' });

export const Dropped = z
  .object({
    messages: z.number().int(),
    runs: z.number().int().describe('runs with at least one message dropped'),
    tokens: z.number().int(),
    last_dropped_run_id: z.string().nullable().describe('run id of the newest dropped message (null without run_ids)'),
  })
  .meta({ id: 'Dropped' });

export const WindowResponse = z.object({ ...StrategyResponseFields, dropped: Dropped }).meta({ id: 'WindowResponse' });
