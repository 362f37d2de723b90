/**
 * The vocabulary Compactor writes into histories and reads back on later calls, in one place:
 * the artifact id's form, the summary request and the summary tool's name, the summarized range's
 * payload and the artifact trail's heading. Recognized exactly, never guessed. The markers a later
 * call honours on its own word (summary, section summary, QA header, tool placeholders) are
 * signed: they are written and verified only by `markers.ts`.
 */

/** An artifact id: `art_` and 24 hex digits. */
export const ARTIFACT_ID = /^art_[0-9a-f]{24}$/;

/**
 * The user half of a `pair` summary. Honoured only right before a summary whose marker verifies
 * (`markers.ts`): on its own it is the user's text.
 */
export const SUMMARY_REQUEST = '[compactor:summary-request] Summarize the conversation so far.';

/**
 * The name of the synthetic tool whose exchange holds a section summary (formats that accept one).
 * Honoured only with a result whose section marker verifies.
 */
export const SUMMARY_TOOL = 'compactor_summary';

/**
 * What a summarized range's artifact holds: the original messages, in order, and the earlier
 * summary it folded (followed by expand to restore the whole transcript).
 */
export interface RangePayload {
  messages: unknown[];
  previous_id: string | null;
}

export function rangePayload(messages: unknown[], previousId: string | null): RangePayload {
  return { messages, previous_id: previousId };
}

export function isRangePayload(value: unknown): value is RangePayload {
  return typeof value === 'object' && value !== null && Array.isArray((value as RangePayload).messages);
}

/**
 * The artifact trail's heading: the line that opens the deterministic section a summary ends with
 * (files read, created, modified and deleted, URLs, errors, tests, commands, the user's
 * constraints). A later summary finds it in the summary it folds and merges it.
 */
export const TRAIL_HEADING = '## Artifact trail (compactor)';

/** A summary's text cut at its artifact trail: the prose before it, and the trail's lines (none when it has no trail). */
export function splitTrail(text: string): { prose: string; lines: string[] } {
  const head = `${TRAIL_HEADING}\n`;
  let start = 0;
  if (!text.startsWith(head)) {
    const at = text.lastIndexOf(`\n${head}`);
    if (at < 0) return { prose: text, lines: [] };
    start = at + 1;
  }
  return { prose: text.slice(0, start).trimEnd(), lines: text.slice(start + head.length).split('\n') };
}

/** A trail line's class and its items (`class: a, b` or a `class:` line followed by `- item` lines), or undefined. */
export function trailLine(line: string): { label: string; items: string[] } | { item: string } | undefined {
  if (line.startsWith('- ')) return { item: line.slice(2) };
  const colon = line.indexOf(':');
  if (colon < 1 || colon > 24 || !/^[a-z][a-z ]*$/.test(line.slice(0, colon))) return undefined;
  const rest = line.slice(colon + 1).trim();
  return { label: line.slice(0, colon), items: rest === '' ? [] : rest.split(', ') };
}

/** Tools whose string arguments carry file contents or patches: `clear_tool_inputs` may clear any of them. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set([
  'write',
  'write_file',
  'create_file',
  'edit',
  'edit_file',
  'multiedit',
  'str_replace_editor',
  'str_replace_based_edit_tool',
  'apply_patch',
  'notebookedit',
  'replace_in_file',
  'insert',
]);

/** Whether `clear_tool_inputs` may clear an argument: any string of a write/edit tool, a `content` string of any other. */
export function clearableArg(tool: string, key: string, value: unknown): boolean {
  return typeof value === 'string' && (WRITE_TOOLS.has(tool.toLowerCase()) || key === 'content');
}
