import { z } from 'zod';
import { Dropped } from '../contract/parts.js';
import { STRATEGIES } from '../strategies/registry.js';
import { HistoryFields, StrategyResponseFields } from './common.js';

export const WindowRequest = z
  .strictObject({ ...HistoryFields, ...STRATEGIES.window.options.shape })
  .meta({ id: 'WindowRequest' });

export const WindowResponse = z.object({ ...StrategyResponseFields, dropped: Dropped }).meta({ id: 'WindowResponse' });
