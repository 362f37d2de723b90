/**
 * `COMPACTOR_*` names that are not the service's but are read beside it, in the shells and
 * containers it shares: the clients and examples (`COMPACTOR_URL`, `COMPACTOR_API_KEY`), the
 * test suite and the benchmarks. Any other unknown `COMPACTOR_*` name is refused at boot as a typo.
 */
export const NEIGHBOUR_NAMES: ReadonlySet<string> = new Set([
  'COMPACTOR_URL',
  'COMPACTOR_API_KEY',
  'COMPACTOR_TEST_REDIS_URL',
  'COMPACTOR_CORPUS_DIR',
  'COMPACTOR_CLIENT_INSTALLED',
  'COMPACTOR_LOAD_SECONDS',
  'COMPACTOR_CLIENTS_CACHE',
  'COMPACTOR_SDK_CACHE',
]);

/** Levenshtein distance, bounded: names are short (under 40 characters), so the table is small. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** The known name closest to `name`, when it is close enough to be what was meant (a third of its length at most). */
export function closestName(name: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const candidate of known) {
    const d = distance(name, candidate);
    if (!best || d < best.d) best = { name: candidate, d };
  }
  return best && best.d <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined;
}

/**
 * What is wrong with the names of `env` (values are never shown; an empty one counts as unset): every
 * `COMPACTOR_*` name must be one of `known` or a neighbour's; `COMPACTOR_API_KEY` (what a client
 * sends) set without `COMPACTOR_API_KEYS` (what the service checks) is refused too, since that
 * typo would boot an open service. Returns one line per problem, naming the variable.
 */
export function nameProblems(env: Readonly<Record<string, string | undefined>>, known: readonly string[]): string[] {
  const problems: string[] = [];
  const set = new Set(known);
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('COMPACTOR_') || set.has(name) || !env[name]) continue;
    if (NEIGHBOUR_NAMES.has(name)) {
      if (name === 'COMPACTOR_API_KEY' && !env.COMPACTOR_API_KEYS) {
        problems.push(
          "COMPACTOR_API_KEY is the clients' variable (the key they send); the service reads COMPACTOR_API_KEYS: set that, or unset COMPACTOR_API_KEY, else the service would start without keys",
        );
      }
      continue;
    }
    const near = closestName(name, known);
    problems.push(`${name} is not a configuration variable${near ? ` (did you mean ${near}?)` : ''}`);
  }
  return problems;
}
