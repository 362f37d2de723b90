/**
 * The fact guard (STRATEGIES.md, rolling step 6): exact identifiers are extracted from the range
 * before summarizing, and those the summary dropped are appended under "Key references", so that
 * file paths, URLs, ids, error codes and measured numbers survive summarization verbatim.
 */
const PATTERNS: RegExp[] = [
  /\bhttps?:\/\/[^\s"'<>()\][]+/g,
  /(?:\.{0,2}\/)?(?:[\w@.-]+\/)+[\w@.-]+\.[A-Za-z0-9]{1,8}\b/g,
  /\b[\w-]+\.(?:py|ts|tsx|js|jsx|mjs|cjs|json|ya?ml|toml|md|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|sh|sql|html|css|txt|lock|cfg|ini)\b/g,
  /\b[A-Z][A-Za-z]*(?:Error|Exception)\b/g,
  /\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b/g,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
  /\b(?:call|toolu|msg|fc|rs|req|run|art)_[A-Za-z0-9]{6,}\b/g,
  /\b[0-9a-f]{12,40}\b/g,
  /\b\d+(?:\.\d+)?\s?(?:ms|s|sec|min|h|KB|MB|GB|KiB|MiB|GiB|%|tokens|req\/s)(?![A-Za-z])/g,
];

/** Identifiers of the range, in first-seen order, at most `limit` (the most frequent win ties). */
export function extractFacts(texts: readonly string[], limit = 40): string[] {
  const seen = new Map<string, { first: number; count: number }>();
  let order = 0;
  for (const text of texts) {
    for (const pattern of PATTERNS) {
      for (const m of text.matchAll(pattern)) {
        const fact = m[0].replace(/[.,;:]+$/, '');
        if (fact.length < 3 || fact.length > 200) continue;
        const entry = seen.get(fact);
        if (entry) entry.count++;
        else seen.set(fact, { first: order++, count: 1 });
      }
    }
  }
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
