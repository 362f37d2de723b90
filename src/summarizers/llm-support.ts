// The LLM summarizer's helpers that need nothing of the SDK (llm.ts is the only module that imports
// it): the usage figures and retry delay a server reports, and how chunk prompts are packed.

/**
 * A token count as the summarizer's server reported it, made a whole number from 0 to 10^12 (0 when
 * it is not a number): a server that reports a negative, fractional, huge or non-numeric figure
 * must not make a summary it wrote fail as an internal error, nor a counter go backwards.
 */
export function reportedTokens(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(Math.round(value), 1e12) : 0;
}

/** How long the server asked us to wait before retrying (`retry-after-ms`, `retry-after` in seconds or as a date). */
export function retryAfter(headers: Headers | undefined): number | undefined {
  const value = headers?.get('retry-after-ms') ?? undefined;
  if (value && Number.isFinite(Number(value))) return Number(value);
  const seconds = headers?.get('retry-after');
  if (!seconds) return undefined;
  if (Number.isFinite(Number(seconds))) return Number(seconds) * 1000;
  const date = Date.parse(seconds);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** Splits items, in order, into runs whose summed cost stays within the budget (one item may exceed it alone). */
export function pack<T>(items: readonly T[], cost: (item: T) => number, budget: number): T[][] {
  const out: T[][] = [[]];
  let used = 0;
  for (const item of items) {
    const c = cost(item);
    const current = out[out.length - 1] as T[];
    if (current.length > 0 && used + c > budget) {
      out.push([item]);
      used = c;
    } else {
      current.push(item);
      used += c;
    }
  }
  return out;
}
