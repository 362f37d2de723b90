import type { z } from 'zod';
import type { ReasonCode } from '../contract/codes.js';
import type { ErrorCode } from '../errors.js';
import type { Warning } from '../history/types.js';
import type { StrategyResponseFields } from '../schemas/common.js';
import { type BilledUsage, keepAll, type StrategyResult, withTotal } from '../strategies/types.js';
import type { Prepared } from './request-history.js';

/**
 * What `Compactor.run` answers: the strategy response's shape, what a result carries beyond the
 * generic fields, and the parts every answer is built from (its token report, the answer of a run
 * that changed nothing).
 */

/** What a strategy's result carries beyond the generic fields (fit's `FitResult`: a summary to prepare, the one spliced in). */
export type Beyond<R> = Partial<Omit<R, keyof StrategyResult<unknown>>>;

/** A strategy endpoint's answer: the contract's common response fields, with the strategy's own fields in `extra`. */
export type StrategyResponse<Extra, R = StrategyResult<Extra>> = z.output<z.ZodObject<typeof StrategyResponseFields>> & {
  /** The error code of a summarizer failure the strategy recovered from; for the metrics, not a response field. */
  failure?: ErrorCode;
  /** What the strategy asks of the service off the request path (`Beyond`), handed on as it is; not response fields. */
  after: Beyond<R>;
  /**
   * For each output message, the input message it is (kept or edited), or -1 for one written anew:
   * how the proxy keeps a conversation's upstream history in the client's terms. Not a response field.
   */
  sources: number[];
  extra: Extra;
};

/** What `out` carries beyond the generic result fields. */
export function beyond<R extends StrategyResult<unknown>>(out: R): Beyond<R> {
  const { plan, warnings, reason, bestEffort, usage, fallback, failure, extra, ...rest } = out;
  return rest;
}

/** The prepared summary a result spliced in (fit's), if any. */
export function splicedOf(after: object): string | undefined {
  const { spliced } = after as { spliced?: unknown };
  return typeof spliced === 'string' ? spliced : undefined;
}

/** The parts of an answer for one request's history: its token report, and the answer that changes nothing. */
export function answers<E, R>(h: Prepared, req: { messages: unknown[] }) {
  const tokens = (saved: number) => ({
    before: h.occupancy,
    after: h.occupancy - saved,
    saved,
    counting: h.counting,
    tokenizer: h.profile.tokenizer,
  });
  const unchanged = (reason: ReasonCode, warnings: Warning[], extra: E, usage?: BilledUsage): StrategyResponse<E, R> => ({
    messages: req.messages,
    format: h.format.name,
    applied: false,
    reason,
    tokens: tokens(0),
    usage: withTotal(usage),
    actions: keepAll(h.items.length),
    warnings,
    sources: req.messages.map((_, i) => i),
    after: {},
    extra,
  });
  return { tokens, unchanged };
}
