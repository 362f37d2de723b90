import type { ArtifactView, Caller } from './artifacts.js';
import { originalText } from './original-text.js';

/**
 * The MCP `recall` tool's read, free of MCP: one page of an original as the model reads it again
 * (`original-text.ts`), with what the answer says about it. Only the page leaves the thread that
 * read the original: where the store is the worker's own, `/mcp` runs it there (`routes/mcp.ts`),
 * and the main thread never holds, nor parses, a 20 MiB original for a 24 KB page.
 */

/** Characters a token is taken to be when paging (`max_tokens`): generous, so a page stays under it. */
const CHARS_PER_TOKEN = 3;
export const DEFAULT_PAGE_TOKENS = 8000;

/** One page of an original and what it is: the artifact's fields but its content, the whole text's length. */
export interface RecallPage extends Omit<ArtifactView, 'content'> {
  /** Characters of the whole text. */
  readonly length: number;
  /** The characters from the page's offset; empty when the offset is past the end. */
  readonly body: string;
  /** Where the next page starts, or null at the end. */
  readonly next: number | null;
}

/** One page of an original: the characters from `offset`, at most `maxTokens` worth, and where the next page starts. */
export function page(whole: string, offset: number, maxTokens: number): { body: string; next: number | null } {
  const end = Math.min(whole.length, offset + Math.max(1, maxTokens) * CHARS_PER_TOKEN);
  return { body: whole.slice(offset, end), next: end < whole.length ? end : null };
}

/**
 * The page of the caller's original `id` from `offset`. `read` reads it as a use (throws
 * `CMP_ERR_ARTIFACT_NOT_FOUND` when unknown or expired); `weigh` is told the characters the read
 * loaded (`/mcp` counts them against the in-flight limit; it may reject).
 */
export async function recallPage(
  read: (id: string, caller: Caller) => Promise<ArtifactView>,
  id: string,
  caller: Caller,
  offset: number,
  maxTokens: number,
  weigh?: (chars: number) => void | Promise<void>,
): Promise<RecallPage> {
  const { content, ...view } = await read(id, caller);
  const whole = originalText(content);
  await weigh?.(whole.length);
  const { body, next } = offset > whole.length ? { body: '', next: null } : page(whole, offset, maxTokens);
  return { ...view, length: whole.length, body, next };
}
