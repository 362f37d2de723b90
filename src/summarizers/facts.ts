import { MAX_FACT, scanFacts, trimEnd } from './fact-scan.js';

/**
 * The fact guard (STRATEGIES.md, rolling step 6): exact identifiers are extracted from the range
 * before summarizing, and those the summary dropped are appended under "Key references", so that
 * file paths, URLs, ids, error codes and measured numbers survive summarization verbatim.
 */

/**
 * Identifiers of the range (URLs, paths, file names with a known extension, `*Error` and
 * `*Exception` names, CONSTANT_NAMES, UUIDs, prefixed ids such as `call_…`, hex strings of 12 to
 * 40 digits, numbers with a unit), each 3 to 200 characters, in first-seen order; past `limit`
 * (default 40), the most frequent are kept (the first seen win ties). Linear in the texts' length
 * whatever they hold (`scanFacts`); never throws.
 */
export function extractFacts(texts: readonly string[], limit = 40): string[] {
  const seen = new Map<string, { first: number; count: number }>();
  let order = 0;
  const emit = (found: string) => {
    const fact = found.slice(0, trimEnd(found, 0, found.length));
    if (fact.length < 3 || fact.length > MAX_FACT) return;
    const entry = seen.get(fact);
    if (entry) entry.count++;
    else seen.set(fact, { first: order++, count: 1 });
  };
  for (const text of texts) scanFacts(text, emit);
  return [...seen.entries()]
    .sort((a, b) => b[1].count - a[1].count || a[1].first - b[1].first)
    .slice(0, limit)
    .sort((a, b) => a[1].first - b[1].first)
    .map(([fact]) => fact);
}

export interface FactReport {
  found: number;
  kept: number;
  appended: number;
}

/** Appends the facts a summary dropped under "Key references"; reports what happened. */
export function guardFacts(summary: string, facts: readonly string[]): { text: string; facts: FactReport } {
  const missing = facts.filter((f) => !summary.includes(f));
  const report = { found: facts.length, kept: facts.length - missing.length, appended: missing.length };
  if (missing.length === 0) return { text: summary, facts: report };
  return { text: `${summary.trimEnd()}\n\nKey references:\n${missing.map((f) => `- ${f}`).join('\n')}`, facts: report };
}
