import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The corpus of real transcripts, in the repository (copied from shared/ by scripts/fixtures.mjs). */
export const CORPUS_DIR = resolve(here, '../fixtures/corpus');

export interface Transcript {
  /** e.g. `openai/tau-bench-airline-gpt-4o__task005_idx005.json` */
  file: string;
  format: 'openai-chat' | 'anthropic';
  messages: unknown[];
  tools?: unknown[];
  model?: string;
  bytes: number;
}

/** Loads every transcript of the corpus, smallest first. */
export function loadCorpus(): Transcript[] {
  const out: Transcript[] = [];
  for (const dir of ['openai', 'anthropic'] as const) {
    for (const name of readdirSync(join(CORPUS_DIR, dir)).filter((f) => f.endsWith('.json'))) {
      const text = readFileSync(join(CORPUS_DIR, dir, name), 'utf8');
      const data = JSON.parse(text) as { messages: unknown[]; tools?: unknown[]; meta?: { model?: string } };
      out.push({
        file: `${dir}/${name}`,
        format: dir === 'openai' ? 'openai-chat' : 'anthropic',
        messages: data.messages,
        ...(data.tools ? { tools: data.tools } : {}),
        ...(data.meta?.model ? { model: data.meta.model } : {}),
        bytes: text.length,
      });
    }
  }
  return out.sort((a, b) => a.bytes - b.bytes);
}
