/** The tokenizers the service can run; both ship inside gpt-tokenizer. */
export type Encoding = 'o200k_base' | 'cl100k_base';

/**
 * How a model's tokens are counted. OpenAI models are counted exactly with their encoding. Other
 * providers publish no client tokenizer, so their counts are estimates: the o200k_base count times
 * a safety factor chosen to overestimate rather than underestimate (a compaction that triggers a
 * little early is cheaper than a request the provider rejects as too long).
 */
export interface ModelProfile {
  /** The key the count cache uses: encoding plus factor. */
  readonly id: string;
  readonly encoding: Encoding;
  readonly exact: boolean;
  readonly factor: number;
  /** Context window in tokens, when known. */
  readonly contextWindow: number | undefined;
  /** What `tokens.tokenizer` reports. */
  readonly tokenizer: string;
}

interface Row {
  prefix: string;
  encoding: Encoding;
  factor?: number;
  contextWindow?: number;
}

/** Longest matching prefix wins. Context windows are the providers' published input limits. */
const TABLE: readonly Row[] = [
  { prefix: 'gpt-5', encoding: 'o200k_base', contextWindow: 400_000 },
  { prefix: 'gpt-5-chat', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'gpt-4.1', encoding: 'o200k_base', contextWindow: 1_047_576 },
  { prefix: 'gpt-4.5', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'gpt-4o', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'chatgpt-4o', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'gpt-oss', encoding: 'o200k_base', contextWindow: 131_072 },
  { prefix: 'codex-', encoding: 'o200k_base', contextWindow: 200_000 },
  { prefix: 'o1', encoding: 'o200k_base', contextWindow: 200_000 },
  { prefix: 'o1-mini', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'o1-preview', encoding: 'o200k_base', contextWindow: 128_000 },
  { prefix: 'o3', encoding: 'o200k_base', contextWindow: 200_000 },
  { prefix: 'o4', encoding: 'o200k_base', contextWindow: 200_000 },
  { prefix: 'gpt-4-turbo', encoding: 'cl100k_base', contextWindow: 128_000 },
  { prefix: 'gpt-4-1106', encoding: 'cl100k_base', contextWindow: 128_000 },
  { prefix: 'gpt-4-0125', encoding: 'cl100k_base', contextWindow: 128_000 },
  { prefix: 'gpt-4-32k', encoding: 'cl100k_base', contextWindow: 32_768 },
  { prefix: 'gpt-4', encoding: 'cl100k_base', contextWindow: 8_192 },
  { prefix: 'gpt-3.5-turbo', encoding: 'cl100k_base', contextWindow: 16_385 },
  { prefix: 'claude-', encoding: 'o200k_base', factor: 1.2, contextWindow: 200_000 },
  { prefix: 'gemini-', encoding: 'o200k_base', factor: 1.1, contextWindow: 1_048_576 },
];

/** Estimate for a model the table does not know, or no model at all. */
const FALLBACK: Row = { prefix: '', encoding: 'o200k_base', factor: 1.1 };

function profileOf(row: Row, exact: boolean, contextWindow: number | undefined): ModelProfile {
  const factor = exact ? 1 : (row.factor ?? 1);
  const id = exact ? row.encoding : `${row.encoding}*${factor}`;
  return { id, encoding: row.encoding, exact, factor, contextWindow, tokenizer: id };
}

/**
 * Resolves a model name (as the agent sends it; a provider prefix such as `openai/` is ignored)
 * to its counting profile. `contextWindow` overrides the table.
 */
export function resolveModel(model: string | undefined, contextWindow?: number): ModelProfile {
  const name = (model ?? '').toLowerCase().replace(/^.*\//, '');
  let best: Row | undefined;
  for (const row of TABLE) {
    if (name.startsWith(row.prefix) && (!best || row.prefix.length > best.prefix.length)) best = row;
  }
  const row = best ?? FALLBACK;
  const exact = best !== undefined && best.factor === undefined;
  return profileOf(row, exact, contextWindow ?? row.contextWindow);
}
