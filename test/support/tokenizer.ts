import { createRequire } from 'node:module';

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');

const require = createRequire(import.meta.url);
const NAMES = { o200k_base: 'gpt-tokenizer/encoding/o200k_base', cl100k_base: 'gpt-tokenizer/encoding/cl100k_base' } as const;

/**
 * gpt-tokenizer's encoding as src/tokens/counter.ts loads it: the CommonJS build, required on first
 * use. The very same module instance, so a test that clears its merge cache clears the service's,
 * and a process loads each rank table once (the ESM build would be a second copy, half a second more).
 */
export function encoding(name: keyof typeof NAMES): Encoding {
  return require(NAMES[name]) as Encoding;
}

/** Tokens of a text under o200k_base, special-token strings counted as text (as the service does). */
export function countO200k(text: string): number {
  return encoding('o200k_base').countTokens(text, { disallowedSpecial: new Set() });
}
