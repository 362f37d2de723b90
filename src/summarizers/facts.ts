import { MAX_FACT, scanFacts, trimEnd } from './fact-scan.js';
import { type ClassCount, renderTrail, type Trail } from './trail.js';
import { renderWords, type UserWords } from './user-words.js';

/**
 * The fact guard (docs/strategies.md, a rolling summary, step 6): exact identifiers are extracted from the range
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
  return rankFacts(texts, limit).facts;
}

/**
 * `extractFacts` with the count of every fact found (before `limit`), and only those `keep`
 * accepts (with an artifact trail, paths and URLs are the trail's: the guard keeps the rest).
 */
export function rankFacts(
  texts: readonly string[],
  limit = 40,
  keep: (fact: string) => boolean = () => true,
): { facts: string[]; found: number } {
  const ranker = new FactRanker(keep);
  for (const text of texts) scanFacts(text, ranker.emit);
  return ranker.result(limit);
}

/** Facts as they are found (`emit`, what `scanFacts` calls), ranked when asked. */
export class FactRanker {
  private readonly seen = new Map<string, { first: number; count: number }>();
  private order = 0;

  constructor(private readonly keep: (fact: string) => boolean = () => true) {}

  readonly emit = (found: string): void => {
    const fact = found.slice(0, trimEnd(found, 0, found.length));
    if (fact.length < 3 || fact.length > MAX_FACT || !this.keep(fact)) return;
    const entry = this.seen.get(fact);
    if (entry) entry.count++;
    else this.seen.set(fact, { first: this.order++, count: 1 });
  };

  /** The `limit` most frequent facts (the first seen win ties), in first-seen order, and how many were found. */
  result(limit = 40): { facts: string[]; found: number } {
    const facts = [...this.seen.entries()]
      .sort((a, b) => b[1].count - a[1].count || a[1].first - b[1].first)
      .slice(0, limit)
      .sort((a, b) => a[1].first - b[1].first)
      .map(([fact]) => fact);
    return { facts, found: this.seen.size };
  }
}

/**
 * What became of a range's identifiers, in all and by class (the trail's classes, and
 * `references` for the other identifiers the guard appends under "Key references"): found, kept
 * by the summarizer (present in its prose), appended (by the trail or the guard), left out (past
 * the trail's budget or the guard's limit).
 */
export interface FactReport {
  found: number;
  kept: number;
  appended: number;
  left_out: number;
  classes: ClassCount[];
}

export const NO_FACTS: FactReport = { found: 0, kept: 0, appended: 0, left_out: 0, classes: [] };

/**
 * Appends the facts a summary dropped under "Key references", then the artifact trail (within its
 * budget, `trail.tokens`), then the user's own words (`words`), to the summarizer's prose; reports
 * what happened. `found` is how many
 * identifiers the guard's `facts` were chosen from.
 */
export function guardFacts(
  summary: string,
  facts: readonly string[],
  found = facts.length,
  trail?: { trail: Trail; tokens: number },
  words?: UserWords,
): { text: string; facts: FactReport } {
  const missing = facts.filter((f) => !summary.includes(f));
  let text =
    missing.length === 0 ? summary : `${summary.trimEnd()}\n\nKey references:\n${missing.map((f) => `- ${f}`).join('\n')}`;
  const classes: ClassCount[] = [];
  if (trail && trail.tokens > 0) {
    const rendered = renderTrail(trail.trail, summary, trail.tokens);
    if (rendered.text) text = `${text.trimEnd()}\n\n${rendered.text}`;
    classes.push(...rendered.counts);
  }
  // The user's own words end the summary, after the trail (`user-words.ts`).
  const listed = words ? renderWords(words) : '';
  if (listed) text = `${text.trimEnd()}\n\n${listed}`;
  if (found > 0)
    classes.push({
      class: 'references',
      found,
      kept: facts.length - missing.length,
      appended: missing.length,
      left_out: found - facts.length,
    });
  const sum = (k: 'found' | 'kept' | 'appended' | 'left_out') => classes.reduce((n, c) => n + c[k], 0);
  return {
    text,
    facts: { found: sum('found'), kept: sum('kept'), appended: sum('appended'), left_out: sum('left_out'), classes },
  };
}
