import { LRUCache } from 'lru-cache';
import { sha256Hex } from '../../history/address.js';
import type { Summarizer, SummaryPlan } from '../../summarizers/types.js';
import type { PreparedHistory } from '../types.js';
import type { SummaryOptions } from './options.js';
import { outsideToolNames, summaryRequest } from './range.js';
import type { RangeArtifact } from './range-artifact.js';

/** Plans kept per summarizer: small values (a few calls each), by how many. */
const PLANS_KEPT = 1024;
const plans = new WeakMap<Summarizer, LRUCache<string, SummaryPlan>>();

/**
 * The calls a summary of a range would make (`Summarizer.plan`), as a dry run prices them: the
 * range read as transcript entries, each rendered and counted (about a tenth of a fit call on the
 * load benchmark's history, on every call that prices a summary). What it reads is named by the
 * key: the range's content (`ranged`, whose id is the caller's own, so no two callers share a
 * plan: its messages' roles and results with it), the format, the tools its results answer that
 * it does not say (`outsideToolNames`: calls made before the range), the earlier summary and the
 * options that shape the request; a later call
 * over the same range finds it. A copy is returned (the caller's to keep).
 */
export function plannedSummary(
  summarizer: Summarizer,
  h: PreparedHistory,
  indexes: readonly number[],
  previous: string | null,
  o: SummaryOptions,
  ranged: RangeArtifact,
): SummaryPlan {
  let kept = plans.get(summarizer);
  if (!kept) {
    kept = new LRUCache({ max: PLANS_KEPT });
    plans.set(summarizer, kept);
  }
  const shape = [o.summarizer, o.max_input_tokens, o.trail_tokens > 0];
  // The messages' roles and results are their content's (`ranged`, under the format); the tools
  // their results answer, the content's too but for calls made before the range.
  const key = sha256Hex(
    JSON.stringify([h.format.name, ranged.own, ranged.sha256, previous, shape, outsideToolNames(h, indexes)]),
  );
  let plan = kept.get(key);
  if (!plan) {
    plan = summarizer.plan(summaryRequest(h, indexes, previous, o, undefined, true));
    kept.set(key, plan);
  }
  return { ...plan, calls: plan.calls.map((c) => ({ ...c })) };
}
