import { type PreparedHistory, prepareHistory } from '../prepared.js';
import type { Applied } from './apply.js';

/**
 * The history a plan leaves, as the next stage of a pipeline sees it: the rendered messages parsed
 * again (their roles, calls and results), their counts, and the occupancy the caller tracks. Run
 * ids do not carry over (a summary belongs to no run).
 */
export function viewOf(h: PreparedHistory, applied: Applied, occupancy: number): PreparedHistory {
  const { items } = h.format.parse(applied.messages);
  return prepareHistory({
    format: h.format,
    messages: applied.messages,
    items,
    counts: applied.counts,
    runIds: undefined,
    occupancy,
  });
}
