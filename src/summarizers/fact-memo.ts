import { hash } from 'node:crypto';
import { Generations } from '../tokens/generations.js';
import { scanFacts } from './fact-scan.js';

/** Texts shorter than this are scanned each time: their digest costs about what their scan does. */
export const MEMO_MIN_CHARS = 256;
/** What the memo holds at most, per thread (keys and facts, two bytes a character, and a fixed cost per entry and fact). */
export const MEMO_MAX_BYTES = 8 * 1024 * 1024;
const ENTRY_OVERHEAD = 64;
const FACT_OVERHEAD = 16;
const NONE: readonly string[] = Object.freeze([]);

const memo = new Generations<readonly string[]>(MEMO_MAX_BYTES, (key, facts) => {
  let chars = key.length;
  for (const fact of facts) chars += fact.length;
  return 2 * chars + ENTRY_OVERHEAD + FACT_OVERHEAD * facts.length;
});

const stats = { scanned: 0, found: 0 };

/** Texts scanned and texts whose facts were found again, since the process started (a test counts them). */
export function factMemoStats(): { scanned: number; found: number } {
  return { ...stats };
}

/**
 * `scanFacts` of a text, the same facts in the same order, found again for a text scanned before
 * (by its SHA-1, and `words`). A summary's range is most of the previous one's again (a prepared
 * summary every few calls of a growing conversation; the trail and the guard read every message
 * of it): each message's text is scanned once. Facts are a function of the text alone, so one
 * caller's text never gives another anything it did not send. Bounded by bytes (least recently
 * used out, by halves); short texts are scanned each time.
 */
export function scanFactsOnce(text: string, emit: (fact: string) => void, words = true): void {
  if (text.length < MEMO_MIN_CHARS) {
    scanFacts(text, emit, words);
    return;
  }
  const key = `${words ? 'w' : 'p'}${hash('sha1', text, 'base64')}`;
  let facts = memo.get(key);
  if (facts === undefined) {
    stats.scanned++;
    const found: string[] = [];
    scanFacts(text, (fact) => found.push(fact), words);
    facts = found.length === 0 ? NONE : found;
    memo.set(key, facts);
  } else {
    stats.found++;
  }
  for (const fact of facts) emit(fact);
}
