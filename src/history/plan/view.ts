import { type PreparedHistory, prepareHistory } from '../prepared.js';
import type { Applied } from './apply.js';

/**
 * The views made of each applied plan, by occupancy: fit prices a stage's output, then the stage
 * takes it, then the prepared range is planned over it, and each asked for the same view (a
 * parse of every rendered message and the groups over them, three times per call). A view is
 * never mutated, so one is shared; the memo goes with the `Applied` it was made from.
 */
const views = new WeakMap<Applied, Map<number, PreparedHistory>>();

/**
 * The history a plan leaves, as the next stage of a pipeline sees it: the rendered messages parsed
 * again (their roles, calls and results), their counts, and the occupancy the caller tracks. Run
 * ids do not carry over (a summary belongs to no run).
 */
export function viewOf(h: PreparedHistory, applied: Applied, occupancy: number): PreparedHistory {
  const made = views.get(applied);
  const known = made?.get(occupancy);
  if (known && known.format === h.format) return known;
  const { items } = h.format.parse(applied.messages);
  const view = prepareHistory({
    format: h.format,
    messages: applied.messages,
    items,
    counts: applied.counts,
    runIds: undefined,
    occupancy,
  });
  if (made) made.set(occupancy, view);
  else views.set(applied, new Map([[occupancy, view]]));
  return view;
}
