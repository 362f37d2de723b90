// The corpus of real agent transcripts the benchmarks replay: the repository's own copy
// (test/fixtures/corpus, written by scripts/fixtures.mjs), or another corpus of the same layout
// where COMPACTOR_CORPUS_DIR points.
import { fileURLToPath } from 'node:url';

export const CORPUS_DIR =
  process.env.COMPACTOR_CORPUS_DIR ?? fileURLToPath(new URL('../../test/fixtures/corpus', import.meta.url));
